"""Learning sanity envs: tiny tasks with a known answer, for checking that an RL setup learns from random init."""
