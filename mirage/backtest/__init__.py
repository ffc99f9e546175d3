"""``mirage backtest``: rolling-origin evaluation of Mirage's agents on any site's log.

:mod:`~mirage.backtest.plan` declares the weeks (history, development, test) and the chain
shapes; :mod:`~mirage.backtest.labels` labels each week's chains once (hindsight gaps of every
submit time, :mod:`mirage.dataset`); :mod:`~mirage.backtest.origin` trains, chooses and
evaluates at one origin; :mod:`~mirage.backtest.report` writes the tables and the plot;
:mod:`~mirage.backtest.cli` is the command. docs/mirage-backtest.md describes the method.
"""
