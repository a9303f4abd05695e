-- A TPC-C-like workload for sysbench (our own script; not a compliant TPC-C implementation).
-- Nine tables, warehouses as the scale, the five transactions with the standard mix:
--   New-Order 45%, Payment 43%, Order-Status 4%, Delivery 4%, Stock-Level 4%.
-- One sysbench event = one transaction; there are no keying or think times.
-- --items and --customers scale the per-warehouse cardinalities down for tiny test runs
-- (TPC-C: 100000 items, 3000 customers and 3000 initial orders per district).
-- Runs on sysbench's mysql and pgsql drivers; the engine differences are in `dialect`.
local common = require("pmem_common")

sysbench.cmdline.options = {
   warehouses = {"Number of warehouses", 1},
   items = {"Number of items (TPC-C: 100000)", 100000},
   customers = {"Customers and initial orders per district (TPC-C: 3000)", 3000},
}

local DISTRICTS = 10
local SYLLABLES = {"BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"}
-- NURand run-time constants (fixed so that runs are repeatable)
local C_LAST, C_ID, C_ITEM = 157, 259, 7911

local function rand(a, b) return sysbench.rand.uniform(a, b) end

local function nurand(a, x, y, c)
   return ((bit.bor(rand(0, a), rand(x, y)) + c) % (y - x + 1)) + x
end

local function last_name(num)
   return SYLLABLES[math.floor(num / 100) + 1] .. SYLLABLES[math.floor(num / 10) % 10 + 1]
      .. SYLLABLES[num % 10 + 1]
end

local function letters(min_len, max_len)
   return sysbench.rand.string(string.rep("@", rand(min_len, max_len)))
end

local function digits(len) return sysbench.rand.string(string.rep("#", len)) end

local function dialect(drv)
   local d = common.dialect(drv)
   d.ts = (d.name == "mysql") and "DATETIME" or "TIMESTAMP"
   return d
end

-- ---------------------------------------------------------------- schema and load
local function create_schema(con, d)
   local s = d.table_suffix
   local stmts = {
      "CREATE TABLE warehouse (w_id INT NOT NULL, w_name VARCHAR(10), w_street_1 VARCHAR(20), "
         .. "w_city VARCHAR(20), w_state CHAR(2), w_zip CHAR(9), w_tax DECIMAL(4,4), "
         .. "w_ytd DECIMAL(12,2), PRIMARY KEY (w_id))" .. s,
      "CREATE TABLE district (d_id INT NOT NULL, d_w_id INT NOT NULL, d_name VARCHAR(10), "
         .. "d_street_1 VARCHAR(20), d_city VARCHAR(20), d_state CHAR(2), d_zip CHAR(9), "
         .. "d_tax DECIMAL(4,4), d_ytd DECIMAL(12,2), d_next_o_id INT, "
         .. "PRIMARY KEY (d_w_id, d_id))" .. s,
      "CREATE TABLE customer (c_id INT NOT NULL, c_d_id INT NOT NULL, c_w_id INT NOT NULL, "
         .. "c_first VARCHAR(16), c_middle CHAR(2), c_last VARCHAR(16), c_street_1 VARCHAR(20), "
         .. "c_city VARCHAR(20), c_state CHAR(2), c_zip CHAR(9), c_phone CHAR(16), "
         .. "c_since " .. d.ts .. ", c_credit CHAR(2), c_credit_lim DECIMAL(12,2), "
         .. "c_discount DECIMAL(4,4), c_balance DECIMAL(12,2), c_ytd_payment DECIMAL(12,2), "
         .. "c_payment_cnt INT, c_delivery_cnt INT, c_data VARCHAR(500), "
         .. "PRIMARY KEY (c_w_id, c_d_id, c_id))" .. s,
      "CREATE INDEX idx_customer_name ON customer (c_w_id, c_d_id, c_last, c_first)",
      "CREATE TABLE history (h_c_id INT, h_c_d_id INT, h_c_w_id INT, h_d_id INT, h_w_id INT, "
         .. "h_date " .. d.ts .. ", h_amount DECIMAL(6,2), h_data VARCHAR(24))" .. s,
      "CREATE TABLE new_orders (no_o_id INT NOT NULL, no_d_id INT NOT NULL, "
         .. "no_w_id INT NOT NULL, PRIMARY KEY (no_w_id, no_d_id, no_o_id))" .. s,
      "CREATE TABLE orders (o_id INT NOT NULL, o_d_id INT NOT NULL, o_w_id INT NOT NULL, "
         .. "o_c_id INT, o_entry_d " .. d.ts .. ", o_carrier_id INT, o_ol_cnt INT, "
         .. "o_all_local INT, PRIMARY KEY (o_w_id, o_d_id, o_id))" .. s,
      "CREATE INDEX idx_orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id)",
      "CREATE TABLE order_line (ol_o_id INT NOT NULL, ol_d_id INT NOT NULL, "
         .. "ol_w_id INT NOT NULL, ol_number INT NOT NULL, ol_i_id INT, ol_supply_w_id INT, "
         .. "ol_delivery_d " .. d.ts .. " NULL, ol_quantity INT, ol_amount DECIMAL(6,2), "
         .. "ol_dist_info CHAR(24), PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))" .. s,
      "CREATE TABLE item (i_id INT NOT NULL, i_im_id INT, i_name VARCHAR(24), "
         .. "i_price DECIMAL(5,2), i_data VARCHAR(50), PRIMARY KEY (i_id))" .. s,
      "CREATE TABLE stock (s_i_id INT NOT NULL, s_w_id INT NOT NULL, s_quantity INT, "
         .. "s_dist_01 CHAR(24), s_dist_02 CHAR(24), s_dist_03 CHAR(24), s_dist_04 CHAR(24), "
         .. "s_dist_05 CHAR(24), s_dist_06 CHAR(24), s_dist_07 CHAR(24), s_dist_08 CHAR(24), "
         .. "s_dist_09 CHAR(24), s_dist_10 CHAR(24), s_ytd INT, s_order_cnt INT, "
         .. "s_remote_cnt INT, s_data VARCHAR(50), PRIMARY KEY (s_w_id, s_i_id))" .. s,
   }
   for _, sql in ipairs(stmts) do
      con:query(sql)
   end
end

local TABLES = {"order_line", "new_orders", "orders", "history", "customer", "district",
                "stock", "item", "warehouse"}

local function bulk(con, head, count, row_fn)
   if count > 0 then
      common.bulk_insert(con, "INSERT INTO " .. head .. " VALUES", row_fn, count)
   end
end

local function address()
   return string.format("'%s', '%s', '%s', '%s'", letters(10, 20), letters(10, 20),
                        letters(2, 2), digits(4) .. "11111")
end

local function load_warehouse(con, w)
   local items, cust = sysbench.opt.items, sysbench.opt.customers
   bulk(con, "warehouse", 1, function()
      return string.format("(%d, '%s', %s, %.4f, 300000.00)", w, letters(6, 10), address(),
                           rand(0, 2000) / 10000)
   end)
   bulk(con, "stock", items, function(i)
      local dist = {}
      for k = 1, 10 do dist[k] = "'" .. letters(24, 24) .. "'" end
      return string.format("(%d, %d, %d, %s, 0, 0, 0, '%s')", i, w, rand(10, 100),
                           table.concat(dist, ", "), letters(26, 50))
   end)
   bulk(con, "district", DISTRICTS, function(d)
      return string.format("(%d, %d, '%s', %s, %.4f, 30000.00, %d)", d, w, letters(6, 10),
                           address(), rand(0, 2000) / 10000, cust + 1)
   end)
   for d = 1, DISTRICTS do
      bulk(con, "customer", cust, function(c)
         local num = (c <= math.min(1000, cust)) and (c - 1) or nurand(255, 0, 999, C_LAST)
         return string.format("(%d, %d, %d, '%s', 'OE', '%s', %s, '%s', CURRENT_TIMESTAMP, "
                              .. "'%s', 50000.00, %.4f, -10.00, 10.00, 1, 0, '%s')",
                              c, d, w, letters(8, 16), last_name(num), address(), digits(16),
                              (rand(1, 10) == 1) and "BC" or "GC", rand(0, 5000) / 10000,
                              letters(300, 500))
      end)
      bulk(con, "history", cust, function(c)
         return string.format("(%d, %d, %d, %d, %d, CURRENT_TIMESTAMP, 10.00, '%s')",
                              c, d, w, d, w, letters(12, 24))
      end)
      -- each customer has one initial order: o_c_id is a random permutation of customers
      local perm = {}
      for c = 1, cust do perm[c] = c end
      for c = cust, 2, -1 do
         local j = rand(1, c)
         perm[c], perm[j] = perm[j], perm[c]
      end
      local first_new = math.floor(cust * 0.7) + 1 -- the last 30% are undelivered
      local lines = {}
      bulk(con, "orders", cust, function(o)
         lines[o] = rand(5, 15)
         local carrier = (o < first_new) and tostring(rand(1, 10)) or "NULL"
         return string.format("(%d, %d, %d, %d, CURRENT_TIMESTAMP, %s, %d, 1)",
                              o, d, w, perm[o], carrier, lines[o])
      end)
      local ol_rows = {}
      for o = 1, cust do
         for n = 1, lines[o] do ol_rows[#ol_rows + 1] = {o, n} end
      end
      bulk(con, "order_line", #ol_rows, function(k)
         local o, n = ol_rows[k][1], ol_rows[k][2]
         local delivered = o < first_new
         return string.format("(%d, %d, %d, %d, %d, %d, %s, 5, %.2f, '%s')",
                              o, d, w, n, rand(1, items), w,
                              delivered and "CURRENT_TIMESTAMP" or "NULL",
                              delivered and 0 or rand(1, 999999) / 100, letters(24, 24))
      end)
      bulk(con, "new_orders", cust - first_new + 1, function(k)
         return string.format("(%d, %d, %d)", first_new + k - 1, d, w)
      end)
   end
end

-- prepare: schema and items (one thread); load: warehouses (parallel over threads)
function cmd_prepare()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   create_schema(con, dialect(drv))
   bulk(con, "item", sysbench.opt.items, function(i)
      return string.format("(%d, %d, '%s', %.2f, '%s')", i, rand(1, 10000), letters(14, 24),
                           rand(100, 10000) / 100, letters(26, 50))
   end)
   con:disconnect()
end

function cmd_load()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   for w = sysbench.tid + 1, sysbench.opt.warehouses, sysbench.opt.threads do
      load_warehouse(con, w)
   end
   con:disconnect()
end

function cmd_cleanup()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   for _, t in ipairs(TABLES) do
      con:query("DROP TABLE IF EXISTS " .. t)
   end
   con:disconnect()
end

sysbench.cmdline.commands = {
   prepare = {cmd_prepare},
   load = {cmd_load, sysbench.cmdline.PARALLEL_COMMAND},
   cleanup = {cmd_cleanup},
}

-- ---------------------------------------------------------------- transactions
local con, W, ITEMS, CUST, LAST_MAX

function thread_init()
   local drv = sysbench.sql.driver()
   con = drv:connect()
   W, ITEMS, CUST = sysbench.opt.warehouses, sysbench.opt.items, sysbench.opt.customers
   LAST_MAX = math.min(999, CUST - 1)
end

function thread_done()
   con:disconnect()
end

common.rollback_on_restart(function() return con end)

-- Deadlocks and serialization failures restart the transaction (counted as ignored errors).
sysbench.hooks.sql_error_ignorable = function(err)
   return err.sql_state == "40P01" or err.sql_state == "40001"
      or err.sql_errno == 1213 or err.sql_errno == 1205
end

local function q(fmt, ...) return con:query(string.format(fmt, ...)) end
local function row(fmt, ...) return con:query_row(string.format(fmt, ...)) end

local function other_warehouse(w)
   if W == 1 then return w end
   local o = rand(1, W - 1)
   return (o >= w) and (o + 1) or o
end

-- 60% of Payment and Order-Status pick the customer by last name (the middle one by first
-- name, as TPC-C says); the rest by id.
local function pick_customer(w, d)
   if rand(1, 100) <= 60 then
      local rs = q("SELECT c_id FROM customer WHERE c_w_id = %d AND c_d_id = %d AND c_last = '%s' "
                   .. "ORDER BY c_first", w, d, last_name(nurand(255, 0, LAST_MAX, C_LAST)))
      if rs ~= nil and rs.nrows > 0 then
         local ids = {}
         for i = 1, rs.nrows do ids[i] = rs:fetch_row()[1] end
         rs:free()
         return tonumber(ids[math.ceil(#ids / 2)])
      end
      if rs ~= nil then rs:free() end
   end
   return nurand(1023, 1, CUST, C_ID)
end

local function new_order()
   local w, d = rand(1, W), rand(1, DISTRICTS)
   local c = nurand(1023, 1, CUST, C_ID)
   local n = rand(5, 15)
   local lines, all_local = {}, 1
   for i = 1, n do
      local supply = (rand(1, 100) == 1) and other_warehouse(w) or w
      if supply ~= w then all_local = 0 end
      lines[i] = {item = nurand(8191, 1, ITEMS, C_ITEM), supply = supply, qty = rand(1, 10)}
   end
   -- sorted stock access avoids deadlocks between concurrent New-Orders
   table.sort(lines, function(a, b)
      return a.supply < b.supply or (a.supply == b.supply and a.item < b.item)
   end)
   if rand(1, 100) == 1 then lines[n].item = ITEMS + 1 end -- 1%: unused item, rolled back

   con:query("BEGIN")
   row("SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse WHERE w_id = %d "
       .. "AND c_w_id = w_id AND c_d_id = %d AND c_id = %d", w, d, c)
   local next_o, d_tax = row("SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = %d AND "
                             .. "d_id = %d FOR UPDATE", w, d)
   local o = tonumber(next_o)
   q("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = %d AND d_id = %d", w, d)
   q("INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, "
     .. "o_all_local) VALUES (%d, %d, %d, %d, CURRENT_TIMESTAMP, NULL, %d, %d)",
     o, d, w, c, n, all_local)
   q("INSERT INTO new_orders (no_o_id, no_d_id, no_w_id) VALUES (%d, %d, %d)", o, d, w)
   for i, l in ipairs(lines) do
      local price = row("SELECT i_price, i_name, i_data FROM item WHERE i_id = %d", l.item)
      if price == nil then
         con:query("ROLLBACK")
         return
      end
      local qty, _, dist = row("SELECT s_quantity, s_data, s_dist_%02d FROM stock WHERE "
                               .. "s_i_id = %d AND s_w_id = %d FOR UPDATE", d, l.item, l.supply)
      qty = tonumber(qty)
      local new_qty = (qty - l.qty >= 10) and (qty - l.qty) or (qty - l.qty + 91)
      q("UPDATE stock SET s_quantity = %d, s_ytd = s_ytd + %d, s_order_cnt = s_order_cnt + 1, "
        .. "s_remote_cnt = s_remote_cnt + %d WHERE s_i_id = %d AND s_w_id = %d",
        new_qty, l.qty, (l.supply ~= w) and 1 or 0, l.item, l.supply)
      q("INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, "
        .. "ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) VALUES "
        .. "(%d, %d, %d, %d, %d, %d, NULL, %d, %.2f, '%s')",
        o, d, w, i, l.item, l.supply, l.qty, l.qty * tonumber(price), dist)
   end
   con:query("COMMIT")
end

local function payment()
   local w, d = rand(1, W), rand(1, DISTRICTS)
   local cw, cd = w, d
   if rand(1, 100) > 85 then
      cw, cd = other_warehouse(w), rand(1, DISTRICTS)
   end
   local amount = rand(100, 500000) / 100
   con:query("BEGIN")
   q("UPDATE warehouse SET w_ytd = w_ytd + %.2f WHERE w_id = %d", amount, w)
   local w_name = row("SELECT w_name, w_street_1, w_city, w_state, w_zip FROM warehouse "
                      .. "WHERE w_id = %d", w)
   q("UPDATE district SET d_ytd = d_ytd + %.2f WHERE d_w_id = %d AND d_id = %d", amount, w, d)
   local d_name = row("SELECT d_name, d_street_1, d_city, d_state, d_zip FROM district "
                      .. "WHERE d_w_id = %d AND d_id = %d", w, d)
   local c = pick_customer(cw, cd)
   local credit = select(2, row("SELECT c_first, c_credit, c_balance FROM customer WHERE "
                                .. "c_w_id = %d AND c_d_id = %d AND c_id = %d FOR UPDATE",
                                cw, cd, c))
   if credit == "BC" then
      local data = row("SELECT c_data FROM customer WHERE c_w_id = %d AND c_d_id = %d AND "
                       .. "c_id = %d", cw, cd, c)
      data = string.sub(string.format("%d %d %d %d %d %.2f ", c, cd, cw, d, w, amount)
                        .. (data or ""), 1, 500)
      q("UPDATE customer SET c_balance = c_balance - %.2f, c_ytd_payment = c_ytd_payment + %.2f, "
        .. "c_payment_cnt = c_payment_cnt + 1, c_data = '%s' WHERE c_w_id = %d AND "
        .. "c_d_id = %d AND c_id = %d", amount, amount, data, cw, cd, c)
   else
      q("UPDATE customer SET c_balance = c_balance - %.2f, c_ytd_payment = c_ytd_payment + %.2f, "
        .. "c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d",
        amount, amount, cw, cd, c)
   end
   q("INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, "
     .. "h_data) VALUES (%d, %d, %d, %d, %d, CURRENT_TIMESTAMP, %.2f, '%s')",
     c, cd, cw, d, w, amount, string.sub((w_name or "") .. "    " .. (d_name or ""), 1, 24))
   con:query("COMMIT")
end

local function order_status()
   local w, d = rand(1, W), rand(1, DISTRICTS)
   con:query("BEGIN")
   local c = pick_customer(w, d)
   row("SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = %d AND "
       .. "c_d_id = %d AND c_id = %d", w, d, c)
   local o = row("SELECT o_id, o_carrier_id, o_entry_d FROM orders WHERE o_w_id = %d AND "
                 .. "o_d_id = %d AND o_c_id = %d ORDER BY o_id DESC LIMIT 1", w, d, c)
   if o ~= nil then
      local rs = q("SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM "
                   .. "order_line WHERE ol_w_id = %d AND ol_d_id = %d AND ol_o_id = %d",
                   w, d, tonumber(o))
      if rs ~= nil then rs:free() end
   end
   con:query("COMMIT")
end

local function delivery()
   local w, carrier = rand(1, W), rand(1, 10)
   con:query("BEGIN")
   for d = 1, DISTRICTS do
      local o = row("SELECT no_o_id FROM new_orders WHERE no_w_id = %d AND no_d_id = %d "
                    .. "ORDER BY no_o_id LIMIT 1 FOR UPDATE", w, d)
      if o ~= nil then  -- a district without undelivered orders is skipped, as TPC-C allows
         o = tonumber(o)
         q("DELETE FROM new_orders WHERE no_w_id = %d AND no_d_id = %d AND no_o_id = %d", w, d, o)
         -- A locking read: under InnoDB's REPEATABLE READ a plain read would use the view of
         -- an earlier district's read and miss an order committed since (c would be nil).
         local c = row("SELECT o_c_id FROM orders WHERE o_w_id = %d AND o_d_id = %d AND "
                       .. "o_id = %d FOR UPDATE", w, d, o) or 0
         q("UPDATE orders SET o_carrier_id = %d WHERE o_w_id = %d AND o_d_id = %d AND o_id = %d",
           carrier, w, d, o)
         q("UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP WHERE ol_w_id = %d AND "
           .. "ol_d_id = %d AND ol_o_id = %d", w, d, o)
         local total = row("SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = %d AND "
                           .. "ol_d_id = %d AND ol_o_id = %d", w, d, o)
         q("UPDATE customer SET c_balance = c_balance + %.2f, c_delivery_cnt = "
           .. "c_delivery_cnt + 1 WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d",
           tonumber(total) or 0, w, d, tonumber(c))
      end
   end
   con:query("COMMIT")
end

local function stock_level()
   local w, d, threshold = rand(1, W), rand(1, DISTRICTS), rand(10, 20)
   con:query("BEGIN")
   local next_o = tonumber(row("SELECT d_next_o_id FROM district WHERE d_w_id = %d AND "
                               .. "d_id = %d", w, d))
   row("SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = %d AND "
       .. "ol_d_id = %d AND ol_o_id < %d AND ol_o_id >= %d AND s_w_id = %d AND "
       .. "s_i_id = ol_i_id AND s_quantity < %d", w, d, next_o, next_o - 20, w, threshold)
   con:query("COMMIT")
end

function event()
   local r = rand(1, 100)
   if r <= 45 then
      new_order()
   elseif r <= 88 then
      payment()
   elseif r <= 92 then
      order_status()
   elseif r <= 96 then
      delivery()
   else
      stock_level()
   end
end
