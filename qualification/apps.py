from django.apps import AppConfig


class QualificationConfig(AppConfig):
    """The qualification round: practice items with feedback before a flow's first real page, a
    pass rule per flow and rater group, and practice answers kept apart from the study's answers."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "qualification"
    verbose_name = "Qualification round"

    def ready(self) -> None:
        # The flows' entry asks the round's app whether the round is due (annotation builds on
        # nothing of qualification: annotation/qualification_gate.py).
        # Imported at the first entry, not at start-up (the scoring loads numpy).
        from annotation.qualification_gate import entry_hook_register

        def qualification_enter(**kwargs) -> bool:
            from qualification.services import qualification_enter as enter

            return enter(**kwargs)

        entry_hook_register(qualification_enter)
