// Minimal .npy (format 1.0-3.0) reader and writer: little-endian, C order.
// Kept dependency-free so tools/ort needs nothing beyond onnxruntime-node.
'use strict';
const fs = require('fs');

// npy descr -> [onnxruntime tensor type, typed array constructor]
const DTYPES = {
    '<f4': ['float32', Float32Array],
    '<f8': ['float64', Float64Array],
    '<f2': ['float16', Uint16Array],
    '|i1': ['int8', Int8Array],
    '|u1': ['uint8', Uint8Array],
    '<i2': ['int16', Int16Array],
    '<u2': ['uint16', Uint16Array],
    '<i4': ['int32', Int32Array],
    '<u4': ['uint32', Uint32Array],
    '<i8': ['int64', BigInt64Array],
    '<u8': ['uint64', BigUint64Array],
    '|b1': ['bool', Uint8Array],
};
const DESCR_OF = {};
for (const [d, [t]] of Object.entries(DTYPES)) DESCR_OF[t] = d;

function fail(path, msg) {
    throw new Error(`${path}: ${msg}`);
}

// Returns {type, dims, data} with data a typed array over a private copy.
function readNpy(path) {
    const buf = fs.readFileSync(path);
    if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY') fail(path, 'byte 0: not a .npy file');
    const major = buf[6];
    let hlen, hstart;
    if (major === 1) {
        hlen = buf.readUInt16LE(8);
        hstart = 10;
    } else if (major === 2 || major === 3) {
        if (buf.length < 12) fail(path, 'byte 8: truncated header');
        hlen = buf.readUInt32LE(8);
        hstart = 12;
    } else {
        fail(path, `byte 6: unsupported .npy version ${major}`);
    }
    if (hstart + hlen > buf.length) fail(path, `byte ${hstart}: truncated header`);
    const header = buf.toString('latin1', hstart, hstart + hlen);
    const descr = /'descr':\s*'([^']*)'/.exec(header);
    const fortran = /'fortran_order':\s*(True|False)/.exec(header);
    const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
    if (!descr || !fortran || !shape) fail(path, `byte ${hstart}: malformed header ${header.trim()}`);
    if (fortran[1] === 'True') fail(path, `byte ${hstart}: Fortran order is not supported`);
    let d = descr[1];
    if (d === '=f4' || d === '=i4' || d === '=i8' || d === '=f8') d = '<' + d.slice(1);
    if (d === '<i1' || d === '<u1' || d === '<b1') d = '|' + d.slice(1);
    if (!(d in DTYPES)) fail(path, `byte ${hstart}: unsupported dtype ${descr[1]}`);
    const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
    if (dims.some((x) => !Number.isInteger(x) || x < 0)) fail(path, `byte ${hstart}: bad shape (${shape[1]})`);
    const [type, Ctor] = DTYPES[d];
    const count = dims.reduce((a, b) => a * b, 1);
    const off = hstart + hlen;
    const nbytes = count * Ctor.BYTES_PER_ELEMENT;
    if (buf.length - off < nbytes) fail(path, `byte ${off}: truncated data (${buf.length - off} of ${nbytes} bytes)`);
    // copy so the typed array is aligned whatever the header length
    const ab = new ArrayBuffer(nbytes);
    new Uint8Array(ab).set(buf.subarray(off, off + nbytes));
    return { type, dims, data: new Ctor(ab) };
}

function writeNpy(path, type, dims, data) {
    const descr = DESCR_OF[type];
    if (!descr) fail(path, `cannot write tensor type ${type}`);
    const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
    let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
    // pad so that the data starts on a 64-byte boundary, header ends in \n
    const total = Math.ceil((10 + header.length + 1) / 64) * 64;
    header = header + ' '.repeat(total - 10 - header.length - 1) + '\n';
    const pre = Buffer.alloc(10);
    pre.write('\x93NUMPY', 0, 'latin1');
    pre[6] = 1;
    pre[7] = 0;
    pre.writeUInt16LE(header.length, 8);
    const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    fs.writeFileSync(path, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

module.exports = { readNpy, writeNpy };
