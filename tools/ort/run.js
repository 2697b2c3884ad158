#!/usr/bin/env node
// Runs an ONNX model with onnxruntime (CPU) and writes its outputs as .npy:
// the source of the float golden files under tests/data/ (docs/testing.md).
//   run.js [--threads N] [--repeat N] [--no-opt] MODEL.onnx IN.npy... OUT.npy...
// One IN per graph input, one OUT per graph output, both in graph order.
// As with npuref, an input whose first dimension N is a multiple of the model's
// fixed batch B (N > B) runs N/B inferences; outputs are concatenated on dim 0.
// --repeat N runs N more timed inferences and prints the median ms to stderr.
'use strict';
const path = require('path');
const { readNpy, writeNpy } = require('./npy.js');

function usage(msg) {
    if (msg) process.stderr.write(`run.js: ${msg}\n`);
    process.stderr.write('usage: run.js [--threads N] [--repeat N] [--no-opt] MODEL.onnx IN.npy... OUT.npy...\n');
    process.exit(2);
}

function loadOrt() {
    try {
        return require('onnxruntime-node');
    } catch (e) {
        process.stderr.write(`run.js: cannot load onnxruntime-node (${e.message.split('\n')[0]}); `
            + `run ${path.join(__dirname, 'setup.sh')}\n`);
        process.exit(3);
    }
}

async function main() {
    const args = process.argv.slice(2);
    const opt = { threads: 1, repeat: 0, level: 'all' };
    while (args.length && args[0].startsWith('--')) {
        const a = args.shift();
        if (a === '--threads' || a === '--repeat') {
            const v = Number(args.shift());
            if (!Number.isInteger(v) || v < 0) usage(`${a} needs a count`);
            opt[a.slice(2)] = v;
        } else if (a === '--no-opt') {
            opt.level = 'disabled';
        } else {
            usage(`unknown option ${a}`);
        }
    }
    if (args.length < 1) usage();
    const ort = loadOrt();
    const model = args.shift();
    const session = await ort.InferenceSession.create(model, {
        intraOpNumThreads: opt.threads,
        interOpNumThreads: 1,
        graphOptimizationLevel: opt.level,
    });
    const nin = session.inputNames.length, nout = session.outputNames.length;
    if (args.length !== nin + nout) {
        usage(`${model}: has ${nin} input(s) [${session.inputNames}] and ${nout} output(s) `
            + `[${session.outputNames}], got ${args.length} file(s)`);
    }
    const ins = args.slice(0, nin).map(readNpy);
    const runs = batchRuns(session, ins, args);
    const parts = [];
    let feeds;
    for (let r = 0; r < runs; r++) {
        feeds = {};
        session.inputNames.forEach((name, i) => {
            const t = runs > 1 ? sliceBatch(ins[i], r, runs) : ins[i];
            feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
        });
        parts.push(await session.run(feeds));
    }
    session.outputNames.forEach((name, i) => {
        const ts = parts.map((p) => p[name]);
        const t = ts[0];
        const dims = runs > 1 ? [t.dims[0] * runs, ...t.dims.slice(1)] : t.dims;
        writeNpy(args[nin + i], t.type, dims, concat(ts.map((x) => x.data)));
    });
    if (opt.repeat > 0) {
        const ms = [];
        for (let r = 0; r < opt.repeat; r++) {
            const t0 = process.hrtime.bigint();
            await session.run(feeds);
            ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
        ms.sort((a, b) => a - b);
        const med = ms.length % 2 ? ms[(ms.length - 1) / 2] : (ms[ms.length / 2 - 1] + ms[ms.length / 2]) / 2;
        process.stderr.write(`median_ms ${med.toFixed(3)} over ${opt.repeat}\n`);
    }
}

// Number of inferences: 1, or N/B when every input's dim 0 is N = k*B, k > 1.
function batchRuns(session, ins, files) {
    const meta = session.inputMetadata || [];
    let runs = 1;
    ins.forEach((t, i) => {
        const m = meta[i];
        const b = m && m.shape && typeof m.shape[0] === 'number' ? m.shape[0] : null;
        if (b === null || !t.dims.length || t.dims[0] <= b) return;
        if (t.dims[0] % b) throw new Error(`${files[i]}: first dimension ${t.dims[0]} is not a multiple of the model's batch ${b}`);
        const k = t.dims[0] / b;
        if (runs !== 1 && runs !== k) throw new Error(`${files[i]}: batch count ${k} differs from the other inputs' ${runs}`);
        runs = k;
    });
    return runs;
}

function sliceBatch(t, r, runs) {
    const n = t.data.length / runs;
    return { type: t.type, dims: [t.dims[0] / runs, ...t.dims.slice(1)], data: t.data.slice(r * n, (r + 1) * n) };
}

function concat(arrays) {
    if (arrays.length === 1) return arrays[0];
    const out = new arrays[0].constructor(arrays.reduce((a, x) => a + x.length, 0));
    let off = 0;
    for (const a of arrays) {
        out.set(a, off);
        off += a.length;
    }
    return out;
}

main().catch((e) => {
    process.stderr.write(`run.js: ${e.message}\n`);
    process.exit(1);
});
