-- pmem-advisor's YCSB-like client for Tarantool, run by the tarantool binary itself:
--   tarantool tarantool_ycsb.lua <eval|load|run> <unix socket> '<json options>'
-- It connects with net.box over the instance's unix socket and prints one JSON line.
-- Records as in K23's YCSB runs and I17's micro-benchmark: an unsigned key and ten 100-byte
-- fields (1 KB per record) in the space `usertable` (memtx, or vinyl when opts.engine says so);
-- reads are `select` by key, writes are `replace` of the whole record (I17 §5.1); keys are
-- scrambled-zipfian (theta 0.99), YCSB's default request distribution (the shared helper of
-- the sysbench YCSB script). Vinyl's fields are random bytes, as YCSB's are: vinyl compresses
-- its run files, and constant fields would shrink the data on disk many times over.
local json = require('json')
local fiber = require('fiber')
local clock = require('clock')
local netbox = require('net.box')

local mode, sock, raw_opts = arg[1], arg[2], arg[3]
local opts = json.decode(raw_opts or '{}')

local function out(t)
    io.stdout:write(json.encode(t), '\n')
    io.stdout:flush()
end

local function fail(msg)
    out({ok = false, error = tostring(msg)})
    os.exit(1)
end

local function connect()
    local c = netbox.connect('unix/:' .. sock, {wait_connected = 30})
    if not c:is_connected() then
        fail('cannot connect to ' .. sock .. ': ' .. tostring(c.error))
    end
    return c
end

local ok, err = pcall(function()
    if mode == 'eval' then
        local c = connect()
        out({ok = true, result = c:eval(opts.code, opts.args or {})})
        c:close()
    elseif mode == 'load' then
        local c = connect()
        local t0 = clock.monotonic()
        -- runs inside the server: one transaction per 1000 records, then a snapshot so the
        -- golden copy recovers from a .snap instead of replaying the load's WAL
        c:eval([[
            local records, engine = ...
            local s = box.space.usertable
            if s ~= nil and s.engine ~= engine then
                s:drop()
                s = nil
            end
            if s == nil then
                s = box.schema.space.create('usertable', {engine = engine})
                s:create_index('primary', {type = 'tree', parts = {1, 'unsigned'}})
            end
            s:truncate()
            local urandom = require('digest').urandom
            local fields = {}
            for f = 1, 10 do fields[f] = string.rep(string.char(96 + f), 100) end
            local i = 1
            while i <= records do
                box.begin()
                for k = i, math.min(i + 999, records) do
                    if engine == 'vinyl' then
                        local r = urandom(1000)
                        for f = 1, 10 do fields[f] = r:sub(f * 100 - 99, f * 100) end
                    end
                    s:replace{k, fields[1], fields[2], fields[3], fields[4], fields[5],
                              fields[6], fields[7], fields[8], fields[9], fields[10]}
                end
                box.commit()
                i = i + 1000
            end
            box.snapshot()
            if engine == 'vinyl' then
                -- one run per range: every trial starts from the same LSM tree, and no
                -- compaction left over from the load runs during a trial
                local pk = s.index.primary
                pk:compact()
                while true do
                    require('fiber').sleep(0.2)
                    local sc, st = box.stat.vinyl().scheduler, pk:stat()
                    if sc.tasks_inprogress == 0 and sc.compaction_queue == 0
                            and st.run_count <= st.range_count then
                        break
                    end
                end
                -- a checkpoint removes the compacted runs, but only a new one: one write
                -- (the loaded count, in a small memtx space) makes the snapshot not a no-op
                local meta = box.schema.space.create('pmem_advisor_load', {if_not_exists = true})
                meta:create_index('primary', {if_not_exists = true})
                meta:replace{1, records}
                box.snapshot()
            end
        ]], {opts.records, opts.engine or 'memtx'}, {timeout = 3600})
        -- vinyl's len() counts statements, not tuples (an estimate): count() scans
        local n = c:eval('local s = box.space.usertable '
                         .. 'if s.engine == "vinyl" then return s:count() end return s:len()')
        out({ok = true, records = n, seconds = clock.monotonic() - t0})
        c:close()
    elseif mode == 'run' then
        local here = debug.getinfo(1, 'S').source:sub(2):match('(.*/)') or './'
        -- pmem_common.lua is the shared workloads' helper (workloads/lua): its folder is given
        package.path = (opts.lua_lib and (opts.lua_lib .. '/?.lua;') or '') .. here .. '?.lua;'
            .. package.path
        sysbench = {rand = {uniform_double = math.random}}  -- the helper's only dependency
        local zipfian = require('pmem_common').zipfian
        math.randomseed(opts.seed or os.time())
        local records, clients = opts.records, opts.clients
        local read_share = opts.read_share
        local warmup, duration = opts.warmup or 0, opts.duration
        local next_key = zipfian(records, 0.99)
        local new = {}
        for f = 1, 10 do new[f] = string.rep(string.char(64 + f), 100) end
        local pool = {}  -- vinyl: random records, as loaded (see the header)
        if opts.engine == 'vinyl' then
            for p = 1, 64 do
                local r = require('digest').urandom(1000)
                pool[p] = {}
                for f = 1, 10 do pool[p][f] = r:sub(f * 100 - 99, f * 100) end
            end
        end
        -- latency histogram: bucket b holds latencies in [1.05^b, 1.05^(b+1)) microseconds
        local hist, ops, errors, first_error = {}, 0, 0, nil
        local measuring, stop = false, false
        local conns = {}
        for i = 1, clients do conns[i] = connect() end
        local done = fiber.channel(clients)
        for i = 1, clients do
            fiber.create(function()
                local c = conns[i]
                local space = c.space.usertable
                if space == nil then
                    first_error = first_error or 'space usertable is missing (not loaded?)'
                    errors = errors + 1
                    done:put(true)
                    return
                end
                while not stop do
                    local key = next_key()
                    local t = clock.monotonic()
                    local good, why = pcall(function()
                        if math.random() < read_share then
                            space:select{key}
                        else
                            local v = #pool > 0 and pool[math.random(#pool)] or new
                            space:replace{key, v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8],
                                          v[9], v[10]}
                        end
                    end)
                    if measuring then
                        if good then
                            local us = (clock.monotonic() - t) * 1e6
                            local b = us <= 1 and 0 or math.floor(math.log(us) / math.log(1.05))
                            hist[b] = (hist[b] or 0) + 1
                            ops = ops + 1
                        else
                            errors = errors + 1
                            first_error = first_error or tostring(why)
                        end
                    end
                    if not good and not c:is_connected() then
                        first_error = first_error or tostring(why)
                        break  -- the server went away: the run reports what it measured
                    end
                end
                done:put(true)
            end)
        end
        fiber.sleep(warmup)
        measuring = true
        local t0 = clock.monotonic()
        fiber.sleep(duration)
        measuring = false
        local elapsed = clock.monotonic() - t0
        stop = true
        for _ = 1, clients do done:get(30) end
        local buckets = {}
        for b, n in pairs(hist) do table.insert(buckets, {1.05 ^ b / 1000, n}) end
        table.sort(buckets, function(a, b) return a[1] < b[1] end)
        out({ok = true, ops = ops, errors = errors, seconds = elapsed, buckets = buckets,
             first_error = first_error})
        for i = 1, clients do conns[i]:close() end
    else
        fail('unknown mode ' .. tostring(mode))
    end
end)
if not ok then fail(err) end
os.exit(0)
