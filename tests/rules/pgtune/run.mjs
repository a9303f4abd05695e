// Runs pgtune's own selectors (configurationSlice.js, vendored unchanged beside this file) on
// the cases given as JSON on stdin and prints each case's settings as JSON: memory values in
// kB, as pgtune computes them before it formats them. The two imports pgtune's module needs
// from its web app (redux's createSelector/createSlice, the form's submit action) are replaced
// by stand-ins that compute the same thing: a selector is its combiner over its inputs.
import { readFileSync, writeFileSync, mkdtempSync, copyFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const work = mkdtempSync(join(tmpdir(), 'pgtune-'))
try {
  writeFileSync(join(work, 'toolkit.mjs'), `
export const createSelector = (inputs, combiner) => (state) => combiner(...inputs.map((f) => f(state)))
export const createSlice = () => ({ actions: { resetConfiguration: () => null }, reducer: null })
`)
  writeFileSync(join(work, 'configurator.mjs'), 'export const submitConfiguration = {}\n')
  copyFileSync(join(here, 'constants.js'), join(work, 'constants.mjs'))
  const src = readFileSync(join(here, 'configurationSlice.js'), 'utf8')
    .replace("from '@reduxjs/toolkit'", "from './toolkit.mjs'")
    .replace("from '@app/actions/configurator'", "from './configurator.mjs'")
    .replace("from './constants'", "from './constants.mjs'")
  writeFileSync(join(work, 'slice.mjs'), src)
  const m = await import(pathToFileURL(join(work, 'slice.mjs')).href)
  const cases = JSON.parse(readFileSync(0, 'utf8'))
  const out = cases.map((c) => {
    const state = { configuration: { osType: 'linux', totalMemoryUnit: 'GB', dbSize: 'mid_ram', ...c } }
    const s = {
      max_connections: m.selectMaxConnections(state),
      huge_pages: m.selectHugePages(state),
      shared_buffers_kb: m.selectSharedBuffers(state),
      effective_cache_size_kb: m.selectEffectiveCacheSize(state),
      maintenance_work_mem_kb: m.selectMaintenanceWorkMem(state),
      checkpoint_completion_target: m.selectCheckpointCompletionTarget(state),
      wal_buffers_kb: m.selectWalBuffers(state),
      default_statistics_target: m.selectDefaultStatisticsTarget(state),
      random_page_cost: m.selectRandomPageCost(state),
      effective_io_concurrency: m.selectEffectiveIoConcurrency(state),
      work_mem_kb: m.selectWorkMem(state),
      jit: m.selectJit(state),
      wal_compression: m.selectWalCompression(state),
      autovacuum_max_workers: m.selectAutovacuumMaxWorkers(state),
      autovacuum_work_mem_kb: m.selectAutovacuumWorkMem(state),
      io_method: m.selectIoMethod(state),
      io_workers: m.selectIoWorkers(state)
    }
    for (const { key, value } of m.selectCheckpointSegments(state)) s[key + '_kb'] = value
    for (const { key, value } of m.selectParallelSettings(state)) s[key] = value
    for (const { key, value } of m.selectWalLevel(state)) s[key] = value
    return s
  })
  process.stdout.write(JSON.stringify(out) + '\n')
} finally {
  rmSync(work, { recursive: true, force: true })
}
