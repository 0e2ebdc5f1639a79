"""CONSTANTS"""

from __future__ import annotations

SOURCE_REPO = "ssmisya/PRMBench"  # on GitHub (mr_eval/tasks/prmtest_classified/data/); see data/README.md
SOURCE_COMMIT = "a1ae4eab803e14c4c6316bf89d1679b0486faa8c"  # the files, fields and scoring read here
# error classes in PRMBench's leaderboard groups (its notebook's classification_parallel_dict), with its short names
GROUPS = {
    "simplicity": {"redundency": "NR", "circular": "NCL"},
    "soundness": {"counterfactual": "ES", "step_contradiction": "SC", "domain_inconsistency": "DC", "confidence": "CI"},
    "sensitivity": {"missing_condition": "PS", "deception": "DR", "multi_solutions": "MS"},
}
CLASSES = tuple(c for group in GROUPS.values() for c in group)
CORRECT_ONLY = "multi_solutions"  # no error step: scored by the F1 on correct steps alone
CHECKSUMS = {  # git blob ids at SOURCE_COMMIT
    "prm800k_test_p1_4o_circular.jsonl": "git-sha1:2f9e2d09b5f205660eed7cc67ecd1d70f239bc39",
    "prm800k_test_p1_4o_confidence.jsonl": "git-sha1:c6e7ebe795893ae170403c7a5cbdb70935301620",
    "prm800k_test_p1_4o_counterfactual.jsonl": "git-sha1:99260fa31df24045f50a368376451c49c2adbc63",
    "prm800k_test_p1_4o_deception.jsonl": "git-sha1:919763dae99078749459497de9dbbe5c7bc2e5c2",
    "prm800k_test_p1_4o_domain_inconsistency.jsonl": "git-sha1:56733f896b17524c6979ba06252b7fe0975c7a5c",
    "prm800k_test_p1_4o_missing_condition.jsonl": "git-sha1:9ff5155045bd73ce3e4b4c0a7c3315f11e4d98e0",
    "prm800k_test_p1_4o_redundency.jsonl": "git-sha1:afa8b1f591b6362537af5c2a391e60f67f09ebbc",
    "prm800k_test_p1_4o_step_contradiction.jsonl": "git-sha1:bd63117b56670e46d4bbbb36f304ac7de60a70d5",
    "prm800k_test_p2_4o_circular.jsonl": "git-sha1:eea8ca60f6d9fbe010f8337b250d7522d530bd34",
    "prm800k_test_p2_4o_confidence.jsonl": "git-sha1:f1fa382c94aca71d9027fc541abc1840b48b594c",
    "prm800k_test_p2_4o_counterfactual.jsonl": "git-sha1:e2e5ef7d6c88a206b86408b5997b086a59775e92",
    "prm800k_test_p2_4o_deception.jsonl": "git-sha1:647c197cfd2c69a55cc25be3dbf00506a95cdb52",
    "prm800k_test_p2_4o_domain_inconsistency.jsonl": "git-sha1:fa454537820c5cb22eeda4d14bf3d137c083c6c9",
    "prm800k_test_p2_4o_missing_condition.jsonl": "git-sha1:2bda48f49da01be4540481e5851baf1711f28b64",
    "prm800k_test_p2_4o_redundency.jsonl": "git-sha1:1be3a9e8d59495b9b7713c4120db3113672c4556",
    "prm800k_test_p2_4o_step_contradiction.jsonl": "git-sha1:3da5b5f308cc96c11a2df10e173e4978a1a8b3a2",
    "prm800k_train_p1_first400_4o_circular.jsonl": "git-sha1:525b1fc1aa86bae1d79b27fa08f590dc543876cb",
    "prm800k_train_p1_first400_4o_confidence.jsonl": "git-sha1:749496b12c03e4163a7054d14df7bef57d3a639d",
    "prm800k_train_p1_first400_4o_counterfactual.jsonl": "git-sha1:621acdeff0697446954c38a2ba368e04d334515d",
    "prm800k_train_p1_first400_4o_deception.jsonl": "git-sha1:7cf296bf2543cd1bc67fe479c8609f9197da353b",
    "prm800k_train_p1_first400_4o_domain_inconsistency.jsonl": "git-sha1:cfcc273dec07ea8d3329461a020e14a433455d14",
    "prm800k_train_p1_first400_4o_missing_condition.jsonl": "git-sha1:265f1139756073d89195ee1120f979adc85c631a",
    "prm800k_train_p1_first400_4o_redundency.jsonl": "git-sha1:5e58c8c8a0c98fbdf85d1edb45d23dba2afd1fed",
    "prm800k_train_p1_first400_4o_step_contradiction.jsonl": "git-sha1:7c0eec893a8411488db47d948a2ce6e1ba2697f4",
    "prm_test_p12_multi_solutions.jsonl": "git-sha1:2cc0947dcce862916bcd9462f9491042e7cec06f",
}
