// Rust panics through traced frames: a panic is an exception of the Itanium unwinder
// (_Unwind_RaiseException), std::panic::catch_unwind a catch. Built by
// tests/integration/test_rust_panics.py (rustc -C opt-level=0 -g); prints the lines of
// tests/progs/tracee.h.
//
//  pn_catch:  catch_unwind(pn_pass1) N times; pn_pass1 -> pn_pass2 -> pn_pass3 (holds a
//             value with a destructor: a cleanup landing pad, then _Unwind_Resume) ->
//             pn_throw, which panics on 4 calls of 5. pn_catch returns normally every
//             time; pn_pass1..3 and pn_throw are unwound when it panicked.
//  pn_re1:    catches what pn_re2 rethrows (resume_unwind) after catching it from
//             pn_re3 -> pn_throw: pn_re2, pn_re3, pn_throw unwound, pn_re1 returns.
//  pn_thread: a thread whose panic nobody catches (the thread's start does): the
//             frames of that thread are unwound, join reports the panic.
//  pn_after:  runs after each catch, to see that tracing carries on.
// With the argument "uncaught", main finally panics through pn_pass1..3 and pn_throw
// (exit status 101). The functions keep their plain names (no_mangle), as the programs
// of tests/progs do.
use std::any::Any;
use std::panic;
use std::sync::atomic::{AtomicU64, Ordering};

static CATCH: AtomicU64 = AtomicU64::new(0);
static PASS1: AtomicU64 = AtomicU64::new(0);
static PASS2: AtomicU64 = AtomicU64::new(0);
static PASS3: AtomicU64 = AtomicU64::new(0);
static THROW: AtomicU64 = AtomicU64::new(0);
static RE1: AtomicU64 = AtomicU64::new(0);
static RE2: AtomicU64 = AtomicU64::new(0);
static RE3: AtomicU64 = AtomicU64::new(0);
static THREAD: AtomicU64 = AtomicU64::new(0);
static AFTER: AtomicU64 = AtomicU64::new(0);
static DROPS: AtomicU64 = AtomicU64::new(0);

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}
fn get(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

struct Guard;
impl Drop for Guard {
    fn drop(&mut self) {
        bump(&DROPS);
    }
}

#[inline(never)]
#[no_mangle]
fn pn_throw(x: u64) -> u64 {
    bump(&THROW);
    if x % 5 != 0 {
        panic::panic_any(x);
    }
    x
}

#[inline(never)]
#[no_mangle]
fn pn_pass3(x: u64) -> u64 {
    bump(&PASS3);
    let _g = Guard;
    pn_throw(x) + 1
}

#[inline(never)]
#[no_mangle]
fn pn_pass2(x: u64) -> u64 {
    bump(&PASS2);
    pn_pass3(x) + 1
}

#[inline(never)]
#[no_mangle]
fn pn_pass1(x: u64) -> u64 {
    bump(&PASS1);
    pn_pass2(x) + 1
}

fn payload(e: Box<dyn Any + Send>) -> u64 {
    *e.downcast::<u64>().expect("a u64 payload")
}

#[inline(never)]
#[no_mangle]
fn pn_catch(x: u64) -> u64 {
    bump(&CATCH);
    match panic::catch_unwind(|| pn_pass1(x)) {
        Ok(v) => v,
        Err(e) => payload(e) + 1000,
    }
}

#[inline(never)]
#[no_mangle]
fn pn_re3(x: u64) -> u64 {
    bump(&RE3);
    pn_throw(x) + 1
}

#[inline(never)]
#[no_mangle]
fn pn_re2(x: u64) -> u64 {
    bump(&RE2);
    match panic::catch_unwind(|| pn_re3(x)) {
        Ok(v) => v,
        Err(e) => {
            let p = payload(e);
            panic::resume_unwind(Box::new(p + 7))
        }
    }
}

#[inline(never)]
#[no_mangle]
fn pn_re1(x: u64) -> u64 {
    bump(&RE1);
    match panic::catch_unwind(|| pn_re2(x)) {
        Ok(v) => v,
        Err(e) => payload(e),
    }
}

#[inline(never)]
#[no_mangle]
fn pn_thread(x: u64) -> u64 {
    bump(&THREAD);
    pn_pass1(x)
}

#[inline(never)]
#[no_mangle]
fn pn_after(x: u64) -> u64 {
    bump(&AFTER);
    x * 2
}

fn check(cond: bool, what: &str) {
    if !cond {
        eprintln!("check failed: {}", what);
        std::process::exit(1);
    }
}

fn main() {
    // No message per panic: the program's output is what the tests compare.
    panic::set_hook(Box::new(|_| {}));
    let uncaught = std::env::args().nth(1).as_deref() == Some("uncaught");
    let n: u64 = 500;
    let mut panics = 0u64;
    let mut sum = 0u64;
    for i in 0..n {
        let v = pn_catch(i);
        if i % 5 != 0 {
            panics += 1;
            check(v == i + 1000, "pn_catch got the payload");
        } else {
            check(v == i + 3, "pn_catch returned normally");
        }
        sum += pn_after(v);
    }
    let r = 40u64;
    let mut rethrown = 0u64;
    for i in 0..r {
        let v = pn_re1(i);
        if i % 5 != 0 {
            rethrown += 1;
            check(v == i + 7, "pn_re1 got the rethrown payload");
        } else {
            check(v == i + 1, "pn_re1 returned normally");
        }
        sum += pn_after(v);
    }
    let threads = 3u64;
    for i in 0..threads {
        let h = std::thread::spawn(move || pn_thread(i * 5 + 1));
        check(h.join().is_err(), "the thread panicked");
    }
    check(get(&DROPS) == get(&PASS3), "every guard was dropped");
    let mut unwound_pass = panics + threads;
    let mut unwound_throw = panics + rethrown + threads;
    let mut calls_pass = n + threads;
    let mut calls_throw = n + r + threads;
    if uncaught {
        unwound_pass += 1;
        unwound_throw += 1;
        calls_pass += 1;
        calls_throw += 1;
    }
    println!("sum {} panics {} rethrown {}", sum, panics, rethrown);
    println!(
        "calls pn_catch={} pn_pass1={} pn_pass2={} pn_pass3={} \
         pn_throw={} pn_re1={} pn_re2={} pn_re3={} \
         pn_thread={} pn_after={}",
        n, calls_pass, calls_pass, calls_pass, calls_throw, r, r, r, threads, n + r
    );
    println!(
        "unwound exception pn_pass1={} pn_pass2={} pn_pass3={} \
         pn_throw={} pn_re2={} pn_re3={} pn_thread={}",
        unwound_pass, unwound_pass, unwound_pass, unwound_throw, rethrown, rethrown, threads
    );
    if uncaught {
        use std::io::Write;
        std::io::stdout().flush().unwrap();
        pn_pass1(1);
    }
}
