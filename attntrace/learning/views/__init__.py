"""grad's gradients beside their stages, train's history, scaling's chart (Rich)."""
