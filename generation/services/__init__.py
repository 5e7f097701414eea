"""Writes of the generation app, one module per seam: `batches` (launch, validate, cancel, resume,
heal), `jobs` (run and record jobs), `outcomes` (the batch → pipeline adapter and provenance),
`scheduler` (the generic batch scheduler both use)."""
