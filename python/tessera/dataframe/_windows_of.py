"""The window constructors a frame and a Series share: ``rolling``, ``expanding`` and
``resample`` (pandas' ``NDFrame`` methods), in one mixin."""

from __future__ import annotations


class WindowMethods:
    """``rolling``, ``expanding`` and ``resample`` of a frame or a Series."""

    def rolling(self, window, min_periods=None, center: bool = False):
        """A rolling window of ``window`` rows (see :class:`Rolling`); over a frame,
        of its numeric columns."""
        from ._window import Rolling

        return Rolling(self, window, min_periods, center)

    def expanding(self, min_periods: int = 1):
        """A window from the first row to each row (see :class:`Expanding`)."""
        from ._window import Expanding

        return Expanding(self, min_periods)

    def resample(self, rule: str, closed=None, label=None):
        """Bins of the datetime index by ``rule`` (see :class:`Resampler`)."""
        from ._resample import Resampler

        return Resampler(self, rule, closed=closed, label=label)
