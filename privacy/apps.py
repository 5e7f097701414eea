from django.apps import AppConfig


class PrivacyConfig(AppConfig):
    name = "privacy"
    verbose_name = "Data policy and de-identification"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Privacy builds on annotation's sources and on generation's backends; those two reach
        # privacy only through what is registered here (annotation/data_policy_hooks.py,
        # generation/data_policy_hooks.py), never by importing it.
        from annotation.data_policy_hooks import (
            import_hook_register,
            source_text_reader_register,
            study_policy_action_register,
        )
        from generation.data_policy_hooks import DataPolicy, data_policy_register
        from privacy.gate import external_call_check, external_call_problem, provenance_policy
        from privacy.selectors import source_text, source_texts
        from privacy.study_policy_command import study_policy

        import_hook_register(_deidentify_on_import)
        source_text_reader_register(source_text)
        study_policy_action_register(study_policy)
        data_policy_register(
            DataPolicy(
                call_check=external_call_check,
                call_problem=external_call_problem,
                provenance=provenance_policy,
                source_texts=source_texts,
            )
        )


def _deidentify_on_import(*, study, sources) -> None:
    from privacy.services import sources_deidentify

    sources_deidentify(study=study, sources=sources, actor="import")
