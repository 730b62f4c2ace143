// rustprog.rs -- built by tests/e2e/test_static.py for x86_64-unknown-linux-musl (static-pie):
// four threads hashing fresh heap buffers, sending to the main thread over a bounded channel,
// then joined.  Deterministic output.
use std::collections::HashMap;
use std::sync::mpsc;
use std::thread;

fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2_000_000);
    let (tx, rx) = mpsc::sync_channel::<u64>(256);
    let mut workers = Vec::new();
    for w in 0..4u64 {
        let tx = tx.clone();
        workers.push(thread::spawn(move || {
            let mut h: u64 = 1469598103934665603 ^ w;
            let mut i = w;
            while i < n {
                let v: Vec<u8> = (0..(32 + i % 200)).map(|k| (k as u64 ^ i) as u8).collect(); // heap churn
                for b in &v {
                    h ^= *b as u64;
                    h = h.wrapping_mul(1099511628211);
                }
                if i % 1000 == 0 {
                    tx.send(h % 1000003).unwrap();
                }
                i += 4;
            }
        }));
    }
    drop(tx);
    let mut m: HashMap<u64, u64> = HashMap::new();
    let mut sum = 0u64;
    let mut count = 0u64;
    for v in rx {
        *m.entry(v % 997).or_insert(0) += 1;
        sum = sum.wrapping_add(v);
        count += 1;
        if count % 400 == 0 {
            println!("step {} {}", count, sum);
        }
    }
    for w in workers {
        w.join().unwrap();
    }
    let mut keys: Vec<_> = m.keys().copied().collect();
    keys.sort();
    println!("done {} {} {} {:?}", count, sum, m.len(), &keys[..3]);
}
