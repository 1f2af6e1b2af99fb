-- wrk script for bench-load.sh: one kind of request per wrk process (TY_KIND: submit, get,
-- list, logs, search), each connection at a fixed rate (TY_RATE requests per second, through
-- wrk's delay()), with the bearer token TY_TOKEN. get, logs and search pick a random job from
-- the file named by TY_IDS (one id per line).
local kind = os.getenv("TY_KIND")
local rate = tonumber(os.getenv("TY_RATE") or "10")
local token = os.getenv("TY_TOKEN") or ""
local ids = {}
if os.getenv("TY_IDS") then
  for line in io.lines(os.getenv("TY_IDS")) do ids[#ids + 1] = line end
end
wrk.headers["Authorization"] = "Bearer " .. token
local spec = [[{"name":"load-llama-finetune","image":"nvcr.io/nvidia/pytorch:24.10-py3",
"command":["torchrun","--nnodes","4","--nproc-per-node","8","train.py"],
"args":["--model","llama-3-8b","--lr","3e-5","--batch-size","16","--epochs","3","--bf16"],
"env":{"NCCL_DEBUG":"WARN","FI_PROVIDER":"efa","HF_HOME":"/fsx/hf","WANDB_PROJECT":"llama"},
"nodes":1,"procs_per_node":1,"resources":{"gpus":0,"efa":4,"memory":"512Gi","shm":"64Gi"},
"restart":{"policy":"on_failure","max_restarts":3},"deadline_seconds":86400,
"labels":{"team":"nlp","project":"llama","owner":"alice"},"suspend":true}]]
local terms = { "loss", "step+42", "%22lr%3D0.001%22", "nccl" }
local counter = 0

function setup(thread)
  thread:set("id", math.random(1000000))
end

function init(args)
  math.randomseed(os.time() + (id or 0))
end

function delay()
  return 1000 / rate
end

function request()
  if kind == "submit" then
    -- headers given to wrk.format replace wrk.headers: the token goes in again
    return wrk.format("POST", "/v1/jobs",
      { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token }, spec)
  elseif kind == "list" then
    counter = counter + 1
    if counter % 2 == 0 then return wrk.format("GET", "/v1/jobs?limit=50") end
    return wrk.format("GET", "/v1/jobs?limit=50&state=succeeded&selector=team%3Dload")
  end
  local id = ids[math.random(#ids)]
  if kind == "get" then
    return wrk.format("GET", "/v1/jobs/" .. id)
  elseif kind == "logs" then
    return wrk.format("GET", "/v1/jobs/" .. id .. "/logs?tail=100&format=ndjson")
  end
  return wrk.format("GET", "/v1/jobs/" .. id .. "/logs/search?q=" .. terms[math.random(#terms)])
end
