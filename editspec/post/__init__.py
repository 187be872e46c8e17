"""The steps after the model, on each unit's ``Correction`` (``diff``): the checks that undo edits
(``checks``) and each edit's ERRANT type (``error_types``); rescoring, which asks the model again,
is ``editspec.decoding.rescoring``."""
