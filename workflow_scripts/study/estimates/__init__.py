"""What a study will hold and need, estimated before any job from its config and each model's shape (found by
``models/model_config.find_config``): the dumps' and splits' sizes (``sizes.py``) and the GPU jobs' memory
(``memory.py``). The run reads them (the dump budget and GPU memory checks, the job priorities) and so does the
forecast (``study/forecast/``), which nothing on the run's path imports."""
