"""One known bug per exercise, chosen so the failure shows in the values (not only in a type or a
timing): the files that the tests of failing inputs (every exercise) and of repro scripts (Phase A)
grade."""

PHASE_A_BUGS = {
    "adamw": "no_bias_correction",
    "focal-loss": "alpha_swapped",
    "causal-mask": "triu_for_tril",
    "knn": "largest_instead_of_smallest",
    "kmeans-edge": "ties_to_last_index",
    "loss-scaling": "no_backoff",
}

BUGS = {
    **PHASE_A_BUGS,
    "masked-ce": "mean_over_all_rows",
    "softmax-regression": "grad_sign",
    "logistic-regression": "no_divide_by_n",
    "naive-bayes": "alpha_ignored",
    "float-formats": "truncation",
    "standardize": "sample_variance",
    "minibatch-sgd": "dropped_last_batch",
    "kl-divergence": "arguments_swapped",
    "grad-accumulation": "summed_not_averaged",
    "mlp-backprop": "missing_transpose",
    "batchnorm": "momentum_inverted",
    "init-scale": "variance_as_std",
    "lora": "scale_alpha",
    "gqa-attention": "no_scale",
    "linear-attention": "no_normaliser",
    "gae-ppo": "bootstrap_through_done",
    "decontaminate": "char_ngrams",
    "point-in-time": "row_itself_included",
    "cv-leakage": "fit_on_all_rows",
    "windows-checkpoint": "target_one_step_late",
    "debug-denoiser": "validation_normalised_with_its_own_statistics",
    "deep-sets": "mean_over_pads",
    "xgb-missing": "lam_omitted",
    "adaboost": "missing_half",
    "ctr-calibration": "correction_inverted",
    "esmm": "sum_not_mean",
    "early-stopping": "patience_off_by_one",
    "auc-ranking": "ap_interpolated",
    "drift-psi": "log10",
    "kmeans": "labels_before_update",
    "conv-params": "ceil_division",
}
