"""The steps before the model: lines into sentence units (``segment``, ``sentencizer``) and the
spelling step (``spelling``, its dictionaries ``lexicon``)."""
