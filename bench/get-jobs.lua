-- wrk script: GET random jobs by id from the file named by TY_IDS (one id per line).
local token = os.getenv("TY_TOKEN") or ""
local ids = {}
for line in io.lines(os.getenv("TY_IDS")) do ids[#ids + 1] = line end
if token ~= "" then wrk.headers["Authorization"] = "Bearer " .. token end
math.randomseed(42)
function request()
  return wrk.format("GET", "/v1/jobs/" .. ids[math.random(#ids)])
end
