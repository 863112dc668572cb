"""flash's tiles and softmax --online's running sums as a person reads them (Rich)."""
