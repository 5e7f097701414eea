"""Writes of the generation app, one module per seam: `batches` (launch, validate, cancel, resume,
heal), `jobs` (run and record jobs), `outcomes` (the batch → pipeline adapter and provenance),
`controls` (planting degraded copies into a study). The batch scheduler is the job layer's
(work.scheduler)."""
