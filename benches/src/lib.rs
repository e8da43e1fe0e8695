//! Criterion benchmarks of the agent SDK's hot paths (event mapping and serialisation per
//! adapter, SSE decoding per provider, the end-to-end loop, session appends).
