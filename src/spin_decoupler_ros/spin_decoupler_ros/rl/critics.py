"""Critics that stay stable at a high update-to-data ratio: SB3's SAC and TD3 policies
whose Q-networks normalise every hidden layer (LayerNorm after each hidden Linear), as
RLPD and SERL do, so many gradient steps per env step do not blow the Q-values up.

Use them as the policy class (``SAC(LayerNormSACPolicy, env, ...)``); a saved model
names its class, so ``SAC.load`` rebuilds the same networks
(test_training_helpers.py::test_layer_norm_critics_normalise_every_hidden_layer_and_load_back).
"""

from __future__ import annotations

from typing import Any

from stable_baselines3.common.policies import ContinuousCritic
from stable_baselines3.sac.policies import SACPolicy
from stable_baselines3.td3.policies import TD3Policy
from torch import nn


def layer_normed(q_network: nn.Module) -> nn.Sequential:
    """``q_network`` with a LayerNorm after every Linear but the output one."""
    if not isinstance(q_network, nn.Sequential):
        raise TypeError(f"a Q-network made by SB3 is a Sequential, not a {type(q_network).__name__}")
    layers: list[nn.Module] = []
    for layer in q_network:
        layers.append(layer)
        if isinstance(layer, nn.Linear) and layer is not q_network[-1]:
            layers.append(nn.LayerNorm(layer.out_features))
    return nn.Sequential(*layers)


def normalise_critic(critic: ContinuousCritic) -> ContinuousCritic:
    """Replace each of ``critic``'s Q-networks by its layer-normed version, under the
    same module names (qf0, qf1, ...), so state dicts keep SB3's layout."""
    networks: list[nn.Module] = [layer_normed(q_network) for q_network in critic.q_networks]
    for index, q_network in enumerate(networks):
        critic.add_module(f"qf{index}", q_network)
    critic.q_networks = networks
    return critic


class LayerNormSACPolicy(SACPolicy):
    """SAC's policy with layer-normed Q-networks (``normalise_critic``)."""

    def make_critic(self, features_extractor: Any = None) -> ContinuousCritic:
        return normalise_critic(super().make_critic(features_extractor))


class LayerNormTD3Policy(TD3Policy):
    """TD3's policy with layer-normed Q-networks (``normalise_critic``)."""

    def make_critic(self, features_extractor: Any = None) -> ContinuousCritic:
        return normalise_critic(super().make_critic(features_extractor))
