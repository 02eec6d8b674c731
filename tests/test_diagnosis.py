"""Mistake diagnosis against files written apart from the bank: independently written versions of
the catalogue's known bugs (tests/fixtures/diagnosis/<exercise>__<mistake>.py, not the bank's own
variants) are diagnosed as the mistake they make; none is diagnosed as a mistake it does not make.
The ones that cannot be diagnosed say why in EXPECTED. Mistakes whose verdict depends on the
machine's speed (a quadratic algorithm stopped at a time limit, or running out of memory first) are
left out: their status would change with the load, and so would the diagnosis."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mlprep.bank import load_bank
from mlprep.grading.diagnosis import diagnose
from mlprep.grading.engine import grade_file

REPO = Path(__file__).resolve().parents[1]
FILES = REPO / "tests" / "fixtures" / "diagnosis"

# file stem -> the known mistake the diagnosis names (None: it names none, for the reason given)
EXPECTED = {
    "adamw__coupled_l2_decay": "coupled_l2_decay",
    "adamw__eps_inside_sqrt": "eps_inside_sqrt",
    "adamw__no_bias_correction": "no_bias_correction",
    "adamw__updates_w_in_place": "updates_w_in_place",
    # Also leaves queries that see no key unzeroed: a second mistake. The diagnosis says that
    # mask_fill_zero explains part of the failures (test below).
    "causal_mask__mask_fill_zero": None,
    "causal_mask__no_scale": "no_scale",
    "float_formats__eps_off_by_factor_two": "eps_off_by_factor_two",
    "float_formats__nan_turned_into_inf": "nan_turned_into_inf",
    # Also raises on a 0-d input (item assignment on a 0-d view): a second mistake.
    "float_formats__ties_away_from_zero": None,
    # Truncating the bits also turns a low-payload NaN into inf, which the bank's variant (NaN kept)
    # does not: named as explaining part of the failures.
    "float_formats__truncation": None,
    "focal_loss__alpha_for_both_classes": "alpha_for_both_classes",
    "focal_loss__gamma_on_p_t": "gamma_on_p_t",
    "focal_loss__log_of_sigmoid": "log_of_sigmoid",
    "focal_loss__sum_not_mean": "sum_not_mean",
    # Swaps the arguments of both kl and kl_from_logits, two variants of the bank: each named as
    # explaining part of the failures.
    "kl_divergence__arguments_swapped": None,
    "kl_divergence__nan_from_0log0": "nan_from_0log0",
    # Its overflow ends in 0 where the variant's ends in NaN: other values.
    "kl_divergence__unstable_softmax": None,
    "kmeans__nan_empty_centroid": "nan_empty_centroid",
    "kmeans__random_init": "random_init",
    "conv_params__bias_per_input_channel": "bias_per_input_channel",
    "conv_params__groups_ignored": "groups_ignored",
    "kmeans_edge__empty_cluster_zeroed": "empty_cluster_zeroed",
    "kmeans_edge__one_iteration_too_many": "one_iteration_too_many",
    "kmeans_edge__ties_to_last_index": "ties_to_last_index",
    # Named with the two variants that fail every check identically (the self-check's table says so).
    "kmeans_edge__tol_unsquared_shift": "tol_unsquared_shift",
    # Returns squared distances where the bank's variant returns distances: other values, so the
    # diagnosis only says which mistakes fail the same checks.
    "knn__returns_distances": None,
    # argpartition's order of the k nearest depends on the distances' last bits: another
    # implementation's unsorted rows differ from the variant's.
    "knn__unsorted_top_k": None,
    "logistic_regression__derivative_s_one_minus_z": "derivative_s_one_minus_z",
    "logistic_regression__extra_sigmoid_derivative": "extra_sigmoid_derivative",
    "logistic_regression__naive_sigmoid": "naive_sigmoid",
    "logistic_regression__no_divide_by_n": "no_divide_by_n",
    "logistic_regression__wrong_update_sign": "wrong_update_sign",
    "loss_scaling__growth_every_step": "growth_every_step",
    "loss_scaling__no_backoff": "no_backoff",
    "masked_ce__indexes_with_ignore_label": "indexes_with_ignore_label",
    "masked_ce__mean_over_all_rows": "mean_over_all_rows",
    "masked_ce__no_max_subtraction": "no_max_subtraction",
    "masked_ce__smoothing_as_sum": "smoothing_as_sum",
    "masked_ce__smoothing_over_v_minus_1": "smoothing_over_v_minus_1",
    "masked_ce__zero_div_all_masked": "zero_div_all_masked",
    # Shuffles with another call of rng, so its trajectory, and the norms the stop check quotes,
    # differ from the variant's.
    "minibatch_sgd__absolute_tol": None,
    "minibatch_sgd__dropped_last_batch": "dropped_last_batch",
    "minibatch_sgd__no_reshuffle": "no_reshuffle",
    "naive_bayes__alpha_ignored": "alpha_ignored",
    "naive_bayes__multiplying_probabilities": "multiplying_probabilities",
    "naive_bayes__normalising_without_logsumexp": "normalising_without_logsumexp",
    "naive_bayes__prior_from_feature_counts": "prior_from_feature_counts",
    # Also skips the max subtraction (NaN at logits of 1e4): named as partly no_max_subtraction.
    "softmax_regression__grad_not_divided_by_n": None,
    "softmax_regression__grad_sign": "grad_sign",
    "softmax_regression__no_max_subtraction": "no_max_subtraction",
    # Also off by one in the loss on random logits, where the variant is right: named as partly
    # one_hot_off_by_one.
    "softmax_regression__one_hot_off_by_one": None,
    "softmax_regression__seed_log_p_plus_1e12": "seed_log_p_plus_1e12",
    "standardize__divide_by_zero": "divide_by_zero",
    "standardize__naive_sum_of_squares": "naive_sum_of_squares",
    "standardize__transform_refits": "transform_refits",
    "adaboost__missing_half": "missing_half",
    "adaboost__no_renormalisation": "no_renormalisation",
    # Its stump search differs from the variant's, so with 0/1 labels it builds other stumps: other values.
    "adaboost__zero_one_labels": None,
    "auc_ranking__ap_interpolated": "ap_interpolated",
    # Breaks ties by position the other way round: the bank's reversed variant of the same mistake.
    "auc_ranking__ties_broken_by_order": "ties_broken_by_order_reversed",
    "batchnorm__biased_running_var": "biased_running_var",
    "batchnorm__eval_uses_batch_stats": "eval_uses_batch_stats",
    "batchnorm__momentum_inverted": "momentum_inverted",
    # Normalises over another axis than the variant does it, with other running statistics: other values.
    "batchnorm__wrong_axis": None,
    "ctr_calibration__correction_inverted": "correction_inverted",
    "ctr_calibration__empty_bin_division": "empty_bin_division",
    "deep_sets__division_by_zero_on_empty": "division_by_zero_on_empty",
    "deep_sets__mean_over_pads": "mean_over_pads",
    # Also lets NaN pads through phi, so the pad checks fail too: a second difference.
    "deep_sets__nan_to_num_after_phi": None,
    "deep_sets__no_missing_flag": "no_missing_flag",
    "drift_psi__bins_from_prod": "bins_from_prod",
    "drift_psi__log_of_zero": "log_of_zero",
    "early_stopping__min_delta_ignored": "min_delta_ignored",
    "early_stopping__patience_off_by_one": "patience_off_by_one",
    "esmm__cvr_on_clicked_only": "cvr_on_clicked_only",
    # Written with F.binary_cross_entropy, which clamps each log at -100: other values (68.75, not inf).
    "esmm__log_of_product": None,
    "gqa_attention__no_scale": "no_scale",
    "gqa_attention__repeat_not_interleave": "repeat_not_interleave",
    "gqa_attention__softmax_wrong_axis": "softmax_wrong_axis",
    "grad_accumulation__clip_per_micro_batch": "clip_per_micro_batch",
    "grad_accumulation__equal_weights_for_uneven_batches": "equal_weights_for_uneven_batches",
    "grad_accumulation__step_each_micro_batch": "step_each_micro_batch",
    "grad_accumulation__summed_not_averaged": "summed_not_averaged",
    "grad_accumulation__zero_grad_inside_loop": "zero_grad_inside_loop",
    # Its own random draws: the statistics the checks quote differ from the variant's.
    "init_scale__he_fan_out": None,
    # Its own random draws: the statistics the checks quote differ from the variant's.
    "init_scale__uniform_without_sqrt3": None,
    # Its own random draws: the statistics the checks quote differ from the variant's.
    "init_scale__variance_as_std": None,
    "linear_attention__future_leak": "future_leak",
    "linear_attention__no_normaliser": "no_normaliser",
    "linear_attention__quadratic_materialisation": "quadratic_materialisation",
    # B is random, so the values differ from the variant's random B.
    "lora__B_random_at_init": None,
    "lora__base_not_frozen": "base_not_frozen",
    # Transposes only where the shapes allow: non-square layers fail with a shape error, not the variant's values.
    "lora__merge_transposed": None,
    "lora__scale_alpha": "scale_alpha",
    "mlp_backprop__bias_grad_not_summed": "bias_grad_not_summed",
    "mlp_backprop__missing_transpose": "missing_transpose",
    "mlp_backprop__relu_mask_all_ones": "relu_mask_all_ones",
    "xgb_missing__default_always_right": "default_always_right",
    # Also computes the missing rows' totals its own way: named as explaining part of the failures.
    "xgb_missing__lam_omitted": None,
    # Drops the missing rows from the candidates too: other gains than the variant's.
    "xgb_missing__missing_dropped_from_totals": None,
    "gae_ppo__bootstrap_through_done": "bootstrap_through_done",
    "gae_ppo__sign_flipped": "sign_flipped",
    "gae_ppo__max_for_min": "max_for_min",
    "gae_ppo__ratio_from_probabilities": "ratio_from_probabilities",
    "decontaminate__no_normalisation": "no_normalisation",
    "decontaminate__char_ngrams": "char_ngrams",
    "point_in_time__cutoff_inclusive": "cutoff_inclusive",
    "point_in_time__row_itself_included": "row_itself_included",
    "cv_leakage__global_standardize": "global_standardize",
    "cv_leakage__fit_on_all_rows": "fit_on_all_rows",
    "cv_leakage__no_stratification": "no_stratification",
    "windows_checkpoint__windows_copied": "windows_copied",
    "windows_checkpoint__non_atomic_write": "non_atomic_write",
    "windows_checkpoint__rng_not_saved": "rng_not_saved",
    "windows_checkpoint__optimizer_not_saved": "optimizer_not_saved",
    "debug_denoiser__loss_against_noisy_input": "loss_against_noisy_input",
    "debug_denoiser__no_zero_grad": "no_zero_grad",
    "debug_denoiser__evaluate_with_dropout_on": "evaluate_with_dropout_on",
    "debug_denoiser__validation_normalised_with_its_own_statistics": "validation_normalised_with_its_own_statistics",
    "debug_denoiser__train_mode_not_restored": "train_mode_not_restored",
    "debug_denoiser__step_before_backward": "step_before_backward",
    # With Adam, zero_grad between backward and step moves no parameter at all: what stepping before backward does.
    "debug_denoiser__zero_grad_between_backward_and_step": "step_before_backward",
    "hashed_features__salted_builtin_hash": "salted_builtin_hash",
    "hashed_features__cross_sum_of_buckets": "cross_sum_of_buckets",
    "hashed_features__sign_from_bucket_bits": "sign_from_bucket_bits",
    "walk_forward__whole_series_to_forecast": "whole_series_to_forecast",
    "walk_forward__fitted_once": "fitted_once",
    "walk_forward__skill_squared_errors": "skill_squared_errors",
    "ab_test__pooled_variance": "pooled_variance",
    "ab_test__impressions_as_bernoulli": "impressions_as_bernoulli",
    "ab_test__mean_of_user_ctrs": "mean_of_user_ctrs",
}


@pytest.fixture(scope="module")
def diagnoses(bank_cache_home: Path) -> dict:
    """Every file graded and diagnosed once, the known mistakes learned once (or taken from the
    self-check's run in the same session), in one data folder."""
    home = bank_cache_home
    previous = os.environ.get("MLPREP_HOME")
    os.environ["MLPREP_HOME"] = str(home)
    try:
        bank = load_bank(REPO)
        found = {}
        for path in sorted(FILES.glob("*.py")):
            exercise = bank.get(path.stem.split("__")[0].replace("_", "-"))
            result = grade_file(exercise, path)
            found[path.stem] = (result, diagnose(exercise, result))
        return found
    finally:
        if previous is None:
            del os.environ["MLPREP_HOME"]
        else:
            os.environ["MLPREP_HOME"] = previous


def test_every_file_written_apart_is_listed() -> None:
    assert sorted(p.stem for p in FILES.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_an_independent_known_mistake_is_diagnosed_as_itself_and_as_nothing_else(diagnoses: dict, stem: str) -> None:
    result, diagnosis = diagnoses[stem]
    assert not result.passed, result.message
    named = [bug.name for bug in diagnosis.matched]
    want = EXPECTED[stem]
    if want is None:
        assert named == [], diagnosis.text()
        assert "does not match any of the" in diagnosis.text()
    else:
        assert want in named, diagnosis.text()
        assert diagnosis.text().startswith("This matches"), diagnosis.text()


def test_most_independent_mistakes_are_diagnosed(diagnoses: dict, capsys: pytest.CaptureFixture) -> None:
    diagnosed = [stem for stem, (_, d) in diagnoses.items() if EXPECTED[stem] in {b.name for b in d.matched}]
    with capsys.disabled():
        print(f"\ndiagnosis of independently written known mistakes: {len(diagnosed)}/{len(diagnoses)}"
              f" ({100 * len(diagnosed) / len(diagnoses):.0f}%)")
    assert len(diagnosed) >= 0.75 * len(diagnoses)


def test_a_known_mistake_plus_another_is_named_as_explaining_part_of_the_failures(diagnoses: dict) -> None:
    _, diagnosis = diagnoses["causal_mask__mask_fill_zero"]
    bug, explained, others = diagnosis.partly[0]
    assert bug.name == "mask_fill_zero"
    assert "left padding and a fully padded row: zeros, no NaN, finite gradients" in others
    assert "gradients match autograd.gradcheck in float64" in explained
    assert "Part of it does: fills masked scores with 0 instead of -inf" in diagnosis.text()
