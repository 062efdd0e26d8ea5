# %% [markdown]
# # Verify a claim and plot its runs
#
# A prediction from `attnverify.theory`, one claim verified at the `smoke` profile (seconds on
# a laptop CPU), its training runs as a tidy pandas DataFrame, and a plot of them against the
# prediction. The cells run in order in a notebook (Jupyter, VS Code) or as a script:
# `python examples/verify_and_plot.py` (needs `pip install 'attnverify[frames]'`).
#
# The claim, `snell.permutation_saddle`: Snell et al.'s free-attention toy started at B = Q = 0
# stays at loss log V exactly under SGD on permutations, while subset data escape.

# %%
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # write files, open no window; leave this line out in a notebook
import matplotlib.pyplot as plt

import attnverify
from attnverify import runs, theory

OUT = Path("attnverify-example")  # what this example writes
OUT.mkdir(exist_ok=True)

# %% [markdown]
# ## The theory's prediction (numpy only: no torch is imported for it)

# %%
L = 8  # the smoke profile's sequence length (= V on permutations)
prediction = theory.predict("snell.permutation_saddle_loss", V=L)
print(f"predicted loss on permutations: {prediction.value:.6f} ({prediction.equation})")

# %% [markdown]
# ## Verify the claim
#
# `workers=1` (the default) trains in this process, so a plain script needs no
# `if __name__ == "__main__":` guard. The runs go to a temporary cache; a second call with the
# same cache reads them instead of training again.

# %%
cache = Path(tempfile.mkdtemp(prefix="attnverify-cache-"))
report = attnverify.verify("snell.permutation_saddle", profile="smoke", cache=cache,
                           progress=False)
outcome = report["snell.permutation_saddle"]
print(report)
print(outcome)
print(outcome.explanation)
report.save(OUT / "report")  # report.json, report.md, report.html, figures/

# %% [markdown]
# ## The runs as a tidy DataFrame: one row per run x evaluation step x metric

# %%
df = runs.frame(cache, claim="snell.permutation_saddle", profile="smoke")
print(df[["key", "task.distribution", "step", "metric", "value", "train_loss"]].head())
final = df[df["step"] == df["run.steps"]].pivot_table(
    index="task.distribution", columns="metric", values="value")
print(final[["loss", "gold_attention"]])

# %% [markdown]
# ## Plot: the loss against the prediction, and the attention on the gold position

# %%
fig, (ax_loss, ax_gold) = plt.subplots(1, 2, figsize=(9, 3.5), layout="constrained")
for distribution, group in df.groupby("task.distribution"):
    loss = group[group["metric"] == "loss"]
    gold = group[group["metric"] == "gold_attention"]
    ax_loss.plot(loss["step"], loss["value"], "o-", ms=3, label=distribution)
    ax_gold.plot(gold["step"], gold["value"], "o-", ms=3, label=distribution)
ax_loss.axhline(prediction.value, color="black", lw=1, ls="--", label="log V (theory)")
ax_loss.set(xlabel="SGD step", ylabel="evaluation loss")
ax_gold.set(xlabel="SGD step", ylabel="mean attention on the gold position")
ax_loss.legend()
ax_gold.legend()
fig.suptitle(f"{outcome.id}: {outcome.verdict}")
fig.savefig(OUT / "runs.png", dpi=110)
plt.close(fig)
print(f"wrote {OUT / 'runs.png'} and the report in {OUT / 'report'}")
