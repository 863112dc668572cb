"""`attntrace grade`: a student's attention function run on the samples and hidden models,
judged case by case, each failure named by check's catalogue (docs/teaching.md)."""
