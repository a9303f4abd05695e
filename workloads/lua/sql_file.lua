-- Replays a file of SQL statements (pmem-advisor splits the user's file and writes the
-- statements separated by NUL bytes). Every client replays the file from its top, in order,
-- cycling; one sysbench event = one statement.
sysbench.cmdline.options = {
   statements_file = {"NUL-separated statements to replay", ""},
}

local statements = {}
local con, pos

local function read_statements(path)
   local f = assert(io.open(path, "rb"), "cannot open statements file " .. tostring(path))
   local text = f:read("*a")
   f:close()
   local list = {}
   for stmt in string.gmatch(text, "([^%z]+)") do
      list[#list + 1] = stmt
   end
   assert(#list > 0, "statements file " .. path .. " holds no statements")
   return list
end

function thread_init()
   statements = read_statements(sysbench.opt.statements_file)
   con = sysbench.sql.driver():connect()
   pos = 0
end

function thread_done()
   con:disconnect()
end

function event()
   pos = pos % #statements + 1
   local rs = con:query(statements[pos])
   if rs ~= nil and type(rs) ~= "number" then
      rs:free()
   end
end
