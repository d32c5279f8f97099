"""The sweep planner (sweep.plan=predict), one stage above the report: which cells of a sweep are worth running,
decided before they run.

    predict.py      every cell's memory and speed predicted from small copies of its model, in one process
                    (`python -m src.plan.predict`, which the launcher starts)
    speed_model.py  a step's time at the real depth from the copies' timed blocks
    waves.py        the predictions and measurements, and which cells run in which wave
    decisions.py    the one line the summary keeps for every cell: why it ran or did not
    sweep.py        the planned sweep itself: predict, run the waves through the launcher, keep each cell's
                    prediction.json (the Hydra launcher, hydra_plugins/trainsweep/, only hands over its jobs)
    estimate.py     a sweep's duration guessed before its first job, from the cells' sizes and a timed step
"""
