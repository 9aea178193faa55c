"""Privacy loss laws of dominating pairs: the exact input of the PLD engine."""
