from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "LLM judges"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Judging adds its section to evaluation's study report and a link to the dashboard
        # through evaluation's registry: judging imports evaluation, never the other way round.
        from evaluation.analysis.item_raters import item_raters_register
        from evaluation.pages.report_sections import ReportSection, report_section_register
        from judging.report import judge_report_section

        # The judges' answers to instrument items, beside the humans' in the item analysis.
        item_raters_register("judges", _judge_answers_frame)
        # Each judge run's calibration and position bias in the study's analysis document.
        from evaluation.analysis.registered_sections import analysis_section_register
        from judging.report import judges_analysis_section

        analysis_section_register("judges", judges_analysis_section)
        # A judge's error spans as suggestions on the radiologists' pages (AI-assisted marking).
        from annotation.span_suggestions import span_suggestions_provider_register

        span_suggestions_provider_register("judges", _span_suggestions)

        report_section_register(
            ReportSection(
                key="judges",
                title="LLM judges beside the radiologists",
                template="judging/_report_section.html",
                context=judge_report_section,
                page="judging:study-judges",
                page_label="LLM judges",
            )
        )


def _judge_answers_frame(*, study):
    # Imported when the analysis asks (pandas): a web worker starts without the scientific stack.
    from judging.instrument_answers import judge_answers_frame

    return judge_answers_frame(study=study)


def _span_suggestions(**kwargs):
    # Imported when a page asks (the planted-control generator loads the lexicon).
    from judging.span_assistance import span_suggestions_provider

    return span_suggestions_provider(**kwargs)
