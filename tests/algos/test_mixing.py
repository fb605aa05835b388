import numpy as np
import pytest

from teamgym.algos import AlphaMixer, BanditAlpha, StaticAlpha
from teamgym.core.rewards import mix
from teamgym.errors import CheckpointError, InvalidArgumentError


def test_static_alpha_global_and_per_agent():
    assert StaticAlpha().alpha_for("coder") == 1.0
    mixer = StaticAlpha({"coder": 2.0}, default=0.5)
    assert mixer.alpha_for("coder") == 2.0 and mixer.alpha_for("tester") == 0.5
    mixer.update({"team_return": 1.0})
    assert mixer.history == [{"default": 0.5, "coder": 2.0}]
    clone = StaticAlpha()
    clone.load_state_dict(mixer.state_dict())
    assert clone.alpha_for("coder") == 2.0
    assert isinstance(mixer, AlphaMixer) and isinstance(BanditAlpha(["a"]), AlphaMixer)
    assert mix({"team": 1.0, "local": 0.25}, 2.0) == 2.25  # the one mixing function the alphas feed
    with pytest.raises(InvalidArgumentError):
        StaticAlpha(float("nan"))


def test_bandit_alpha_learns_the_best_arm():
    mixer = BanditAlpha(["coder", "tester"], grid=(0.0, 0.5, 1.0, 2.0), gamma=0.1, seed=0)
    for _ in range(600):
        # team return is highest when the coder uses alpha = 1 (a stationary toy landscape)
        mixer.update({"team_return": 1.0 - abs(mixer.alpha_for("coder") - 1.0)})
    probs = mixer.probabilities("coder")
    assert int(np.argmax(probs)) == 2 and probs[2] > 0.5
    assert len(mixer.history) == 600 and set(mixer.history[0]) == {"coder", "tester"}


def test_bandit_alpha_state_dict_resumes_identically():
    a = BanditAlpha(["x"], seed=3)
    for i in range(10):
        a.update({"team_return": float(i % 3)})
    b = BanditAlpha(["x"], seed=99)
    b.load_state_dict(a.state_dict())
    for i in range(10):
        a.update({"team_return": float(i)})
        b.update({"team_return": float(i)})
        assert a.alpha_for("x") == b.alpha_for("x")
    with pytest.raises(CheckpointError):
        b.load_state_dict({})
    with pytest.raises(InvalidArgumentError, match="team_return"):
        a.update({})
    with pytest.raises(InvalidArgumentError, match="unknown agent"):
        a.alpha_for("nobody")
