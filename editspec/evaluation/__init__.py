"""Evaluation of corrections: ``errant`` (span P/R/F0.5 against gold M2), ``gleu`` (JFLEG's
GLEU), ``stats`` (paired bootstrap, detection AUC) and ``run`` (a corrector over a whole set).
Import from the module that defines the thing; this package re-exports nothing."""
