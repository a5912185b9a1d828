//! Request-head parsing throughput: `parse_head` (httparse plus ringside's
//! strict checks) against bare httparse on the same input, which is the
//! baseline the strict layer's cost is measured by.

use std::hint::black_box;
use std::mem::MaybeUninit;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ringside_http::h1::{parse_head, parse_head_into};
use ringside_http::{Limits, RequestHead};

const MINIMAL: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";

/// What wrk sends by default.
const WRK: &[u8] = b"GET / HTTP/1.1\r\nHost: localhost:8080\r\n\r\n";

/// A typical browser navigation: ~500 bytes, 12 headers.
const BROWSER: &[u8] = b"GET /articles/2024/thread-per-core-servers?ref=home&page=2 HTTP/1.1\r\n\
Host: www.example.com\r\n\
User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\n\
Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n\
Accept-Language: en-US,en;q=0.5\r\n\
Accept-Encoding: gzip, deflate, br, zstd\r\n\
Referer: https://www.example.com/\r\n\
Connection: keep-alive\r\n\
Cookie: session=3f2a9c1e8b7d4a60; theme=dark\r\n\
Upgrade-Insecure-Requests: 1\r\n\
Sec-Fetch-Dest: document\r\n\
Sec-Fetch-Mode: navigate\r\n\
Sec-Fetch-Site: same-origin\r\n\r\n";

fn bench_parse_head(c: &mut Criterion) {
    let limits = Limits::default();
    let mut group = c.benchmark_group("parse_head");
    for (name, req) in [("minimal", MINIMAL), ("browser", BROWSER), ("wrk", WRK)] {
        assert!(
            parse_head(req, &limits).unwrap().is_some(),
            "{name} must parse"
        );
        group.throughput(Throughput::Bytes(req.len() as u64));
        // As the server parses: into a slot it reuses for every request.
        let mut slot = RequestHead::empty();
        group.bench_function(name, |b| {
            b.iter(|| {
                parse_head_into(black_box(req), black_box(&limits), &mut slot)
                    .map(|done| done && slot.keep_alive)
            })
        });
        group.bench_function(format!("{name}/httparse"), |b| {
            b.iter(|| {
                // Same setup as parse_head: 100 uninitialized header slots.
                let mut headers = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; 100];
                let mut parsed = httparse::Request::new(&mut []);
                parsed
                    .parse_with_uninit_headers(black_box(req), &mut headers)
                    .map(|s| s.is_complete())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_parse_head);
criterion_main!(benches);
