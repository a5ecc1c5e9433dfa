from tests.rollout.toy_game import register

register()
