"""The dashboard's HTML pages, pointing one way: views (dashboard_views.py, plan_views.py,
team_views.py, adjudication_views.py) -> context builders (context.py, report_sections.py) -> the
pure formatter (report.py)."""
