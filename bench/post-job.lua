-- wrk script: POST a realistic job spec (640 bytes) with a bearer token. The jobs are
-- submitted suspended, so the benchmark measures the durable submission path, not processes.
local token = os.getenv("TY_TOKEN") or ""
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
if token ~= "" then wrk.headers["Authorization"] = "Bearer " .. token end
wrk.body = [[{"name":"bench-llama-finetune","image":"nvcr.io/nvidia/pytorch:24.10-py3",
"command":["torchrun","--nnodes","4","--nproc-per-node","8","train.py"],
"args":["--model","llama-3-8b","--lr","3e-5","--batch-size","16","--epochs","3","--bf16"],
"env":{"NCCL_DEBUG":"WARN","FI_PROVIDER":"efa","HF_HOME":"/fsx/hf","WANDB_PROJECT":"llama"},
"nodes":1,"procs_per_node":1,"resources":{"gpus":0,"efa":4,"memory":"512Gi","shm":"64Gi"},
"placement":{"instance_type":"p5.48xlarge","capacity_type":"on-demand"},
"restart":{"policy":"on_failure","max_restarts":3},"deadline_seconds":86400,
"labels":{"team":"nlp","project":"llama","owner":"alice"},"suspend":true}]]
-- No response() hook: defining one makes wrk parse every response into Lua, which costs more
-- CPU than the daemon's own HTTP handling and takes it from the daemon on these 2 cores. wrk
-- counts non-2xx answers itself, and bench-submit.sh checks the stored job count.
function done(summary, latency, requests)
  io.write(string.format("non-2xx responses: %d\n", summary.errors.status))
end
