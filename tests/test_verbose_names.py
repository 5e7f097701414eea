"""Every model's plural name reads as English in the admin ("generation batches", not "batchs")."""

from django.apps import apps

IRREGULAR_ENDINGS = ("chs", "shs", "sss", "xs", "ys", "zs")


def test_plural_names_are_english():
    for model in apps.get_models():
        if model._meta.app_label not in {"annotation", "evaluation", "generation", "ml"}:
            continue
        plural = str(model._meta.verbose_name_plural)
        singular = str(model._meta.verbose_name)
        if plural.endswith(("entries", "batches", "studies")):
            continue
        # Django's default adds an "s", which misspells words ending in y, ch, sh, s, x or z.
        wrong = (
            plural == f"{singular}s"
            and plural.endswith(IRREGULAR_ENDINGS)
            and not plural.endswith(("ays", "eys"))
        )
        assert not wrong, f"{model._meta.label}: {plural!r}"
