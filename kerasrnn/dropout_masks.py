"""`ForwardsDropoutMasks`: the dropout-mask protocol of Keras' RNN loop handed through a
wrapper to the cell it wraps. A low-level module, so that both the wrapper cells of
`kerasrnn.cells` (the attention cell) and the wrapper layers of `kerasrnn.layers`
(`WeightDrop`) take it without one package importing the other."""

from kerasrnn._private import DropoutRNNCell


class ForwardsDropoutMasks(DropoutRNNCell):
    """Dropout masks for a cell that wraps another (`self.cell`): `keras.layers.RNN` asks
    the outermost cell for its masks once before the time loop and resets them after; a
    wrapper hands both on, so the wrapped cell's masks stay fixed across time steps.

    Subclasses override `_wrapped_step_input` where the wrapped cell reads another input
    than the wrapper's (an attention cell feeds the context beside it)."""

    def _wrapped_step_input(self, step_input):
        return step_input

    def get_dropout_mask(self, step_input):
        if isinstance(self.cell, DropoutRNNCell):
            return self.cell.get_dropout_mask(self._wrapped_step_input(step_input))
        return None

    def get_recurrent_dropout_mask(self, step_input):
        if isinstance(self.cell, DropoutRNNCell):
            return self.cell.get_recurrent_dropout_mask(step_input)
        return None

    def reset_dropout_mask(self):
        if isinstance(self.cell, DropoutRNNCell):
            self.cell.reset_dropout_mask()

    def reset_recurrent_dropout_mask(self):
        if isinstance(self.cell, DropoutRNNCell):
            self.cell.reset_recurrent_dropout_mask()
