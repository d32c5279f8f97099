"""What a run and a sweep say: the typed sections (sections) and the report that holds them (document), the
numbers derived from the meter (analysis), report.json/md on disk (files), a sweep's ranked table,
recommendation and plots (summary, plots), CSV and W&B logging (loggers), and `python -m src.report`
(__main__). Imports every stage below it."""
