"""Adapters that connect racer to other libraries (installed as ``racer.adapters``).

The race core never imports this package; each adapter imports its library lazily so that
``import racer`` works without scikit-learn or Optuna installed.
"""
