-- Shared helpers for pmem-advisor's own sysbench scripts (loaded through LUA_PATH).
local ffi = require("ffi")

local M = {}

local function gcd(a, b)
   while b ~= 0 do
      a, b = b, a % b
   end
   return a
end

-- Scrambled zipfian over [1, n], as in YCSB (Gray et al., "Quickly generating
-- billion-record synthetic databases"): rank 0 is the hottest; the rank is then scrambled by
-- an affine permutation (a*rank + b mod n, gcd(a, n) = 1) so the hot keys spread over the key
-- space instead of clustering at its start, and every key stays reachable.
function M.zipfian(n, theta)
   theta = theta or 0.99
   local exact = math.min(n, 1000000)
   local zetan = 0
   for i = 1, exact do
      zetan = zetan + 1 / (i ^ theta)
   end
   if n > exact then
      -- the tail of the sum, by its integral (error far below the sampling noise)
      zetan = zetan + ((n ^ (1 - theta)) - (exact ^ (1 - theta))) / (1 - theta)
   end
   local zeta2 = 1 + 0.5 ^ theta
   local alpha = 1 / (1 - theta)
   local eta = (1 - (2 / n) ^ (1 - theta)) / (1 - zeta2 / zetan)
   local half_pow = 0.5 ^ theta
   local nn = ffi.new("uint64_t", n)
   local a = math.floor(n * 0.6180339887) + 1
   while gcd(a, n) ~= 1 do
      a = a + 1
   end
   local aa, bb = ffi.new("uint64_t", a), ffi.new("uint64_t", math.floor(n / 3))
   return function()
      local u = sysbench.rand.uniform_double()
      local uz = u * zetan
      local rank
      if uz < 1 then
         rank = 0
      elseif uz < 1 + half_pow then
         rank = 1
      else
         rank = math.floor(n * ((eta * u - eta + 1) ^ alpha))
      end
      -- exact in 64-bit unsigned arithmetic (a*rank can exceed a double's 53 bits)
      local h = (aa * rank + bb) % nn
      return tonumber(h) + 1
   end
end

-- The engine-specific SQL the scripts need, keyed by sysbench driver name.
function M.dialect(drv)
   local name = drv:name()
   if name == "mysql" then
      return {name = name, table_suffix = " ENGINE=InnoDB"}
   elseif name == "pgsql" then
      return {name = name, table_suffix = ""}
   end
   error("unsupported database driver: " .. name)
end

-- Rows per multi-row INSERT during loads.
function M.bulk_insert(con, head, rows_fn, count)
   local batch = 0
   con:bulk_insert_init(head)
   for i = 1, count do
      con:bulk_insert_next(rows_fn(i))
      batch = batch + 1
   end
   con:bulk_insert_done()
end

-- Roll back whatever the failed event left open, so the restarted event starts clean.
function M.rollback_on_restart(get_con)
   sysbench.hooks.before_restart_event = function(err)
      local con = get_con()
      if con ~= nil then
         pcall(function() con:query("ROLLBACK") end)
      end
   end
end

return M
