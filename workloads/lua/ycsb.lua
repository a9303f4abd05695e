-- YCSB-like core workloads for sysbench (our own script): one table of 1 KB rows
-- (10 fields of 100 bytes), keys drawn from a scrambled zipfian distribution (theta 0.99).
--   A: 50% read / 50% update    B: 95% read / 5% update
--   C: 100% read                F: 50% read / 50% read-modify-write
-- One sysbench event = one YCSB operation.
local common = require("pmem_common")

sysbench.cmdline.options = {
   records = {"Number of records (1 KB each)", 1000},
   read_proportion = {"Share of reads", 0.5},
   update_proportion = {"Share of single-field updates", 0.5},
   rmw_proportion = {"Share of read-modify-write transactions", 0},
   zipf_theta = {"Zipfian constant", 0.99},
}

local FIELDS = 10
local FIELD_TEMPLATE = string.rep("@", 100)

local function field_list()
   local names = {}
   for f = 0, FIELDS - 1 do
      names[#names + 1] = "field" .. f
   end
   return table.concat(names, ", ")
end

function cmd_prepare()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   local d = common.dialect(drv)
   local cols = {}
   for f = 0, FIELDS - 1 do
      cols[#cols + 1] = string.format("field%d VARCHAR(100) NOT NULL", f)
   end
   con:query("DROP TABLE IF EXISTS usertable")
   con:query(string.format("CREATE TABLE usertable (ycsb_key INTEGER NOT NULL PRIMARY KEY, %s)%s",
                           table.concat(cols, ", "), d.table_suffix))
   local n = sysbench.opt.records
   local step = 5000
   for first = 1, n, step do
      local last = math.min(n, first + step - 1)
      common.bulk_insert(con, "INSERT INTO usertable (ycsb_key, " .. field_list() .. ") VALUES",
         function(i)
            local vals = {}
            for f = 1, FIELDS do
               vals[f] = "'" .. sysbench.rand.string(FIELD_TEMPLATE) .. "'"
            end
            return string.format("(%d, %s)", first + i - 1, table.concat(vals, ", "))
         end, last - first + 1)
   end
   con:disconnect()
end

function cmd_cleanup()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   con:query("DROP TABLE IF EXISTS usertable")
   con:disconnect()
end

sysbench.cmdline.commands = {
   prepare = {cmd_prepare},
   cleanup = {cmd_cleanup},
}

local con, read_stmt, read_param, updates, next_key
local p_read, p_update

function thread_init()
   local drv = sysbench.sql.driver()
   con = drv:connect()
   read_stmt = con:prepare("SELECT " .. field_list() .. " FROM usertable WHERE ycsb_key = ?")
   read_param = read_stmt:bind_create(sysbench.sql.type.INT)
   read_stmt:bind_param(read_param)
   updates = {}
   for f = 0, FIELDS - 1 do
      local stmt = con:prepare(string.format(
         "UPDATE usertable SET field%d = ? WHERE ycsb_key = ?", f))
      local value = stmt:bind_create(sysbench.sql.type.VARCHAR, 100)
      local key = stmt:bind_create(sysbench.sql.type.INT)
      stmt:bind_param(value, key)
      updates[f] = {stmt = stmt, value = value, key = key}
   end
   next_key = common.zipfian(sysbench.opt.records, sysbench.opt.zipf_theta)
   p_read = sysbench.opt.read_proportion
   p_update = p_read + sysbench.opt.update_proportion
end

common.rollback_on_restart(function() return con end)

local function read(key)
   read_param:set(key)
   local rs = read_stmt:execute()
   if rs ~= nil then rs:free() end
end

local function update(key)
   local u = updates[sysbench.rand.uniform(0, FIELDS - 1)]
   u.value:set(sysbench.rand.string(FIELD_TEMPLATE))
   u.key:set(key)
   u.stmt:execute()
end

function event()
   local key = next_key()
   local r = sysbench.rand.uniform_double()
   if r < p_read then
      read(key)
   elseif r < p_update then
      update(key)
   else
      con:query("BEGIN")
      read(key)
      update(key)
      con:query("COMMIT")
   end
end

function thread_done()
   read_stmt:close()
   for f = 0, FIELDS - 1 do
      updates[f].stmt:close()
   end
   con:disconnect()
end
