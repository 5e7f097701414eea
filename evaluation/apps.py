from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # DPO training (ml/) reads its preference pairs through the export's reader; ml imports no
        # app above it, so the reader is registered here. Imported lazily by the export itself.
        from ml.preference_training import preference_source_register

        def records(**kwargs):
            from evaluation.exports.preferences import preference_records

            return preference_records(**kwargs)

        def read_jsonl(path):
            from evaluation.exports.preferences import read_jsonl as read

            return read(path)

        from evaluation.exports.preferences import NoPreferencesError

        preference_source_register(records, read_jsonl, NoPreferencesError)

        # The adaptive allocation hands out the lay flow's rows while a study has it on.
        # Imported at the first handout, not at start-up (a web worker loads no numpy until then).
        from annotation.allocation_hooks import row_handout_register

        def adaptive_row_handout(**kwargs):
            from evaluation.planning.adaptive import adaptive_row_handout as handout

            return handout(**kwargs)

        row_handout_register(adaptive_row_handout)

        # The raw and adjudicated views, in the report and as a dashboard page of their own.
        from evaluation.pages.report_sections import ReportSection, report_section_register

        report_section_register(
            ReportSection(
                key="adjudication",
                title="Adjudication: raw and adjudicated figures",
                template="evaluation/_adjudication.html",
                context=_adjudication_section,
                page="evaluation:study-adjudication",
                page_label="Adjudication",
            )
        )


def _adjudication_section(*, study):
    from evaluation.pages.adjudication_views import adjudication_report_section

    return adjudication_report_section(study=study)
