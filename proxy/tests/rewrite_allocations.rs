//! A request that no rewrite rule matches allocates nothing, with 50 rules
//! whose patterns have literal prefixes (`^/legacy-N/`, passed over by a
//! byte comparison) and a few without (run by the compiled regex, whose
//! matcher is warm after the first request).

use std::net::IpAddr;
use std::path::Path;

use ringside::config::Config;
use ringside::edge::rewrite::{find, Level, Request};

#[path = "../../testsupport/counting_alloc.rs"]
mod counting;
use counting::{allocations, count_here, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

struct Req(&'static str);

impl Request for Req {
    fn path(&self) -> &[u8] {
        self.0.as_bytes()
    }
    fn query(&self) -> Option<&[u8]> {
        Some(b"page=2")
    }
    fn host(&self) -> Option<&[u8]> {
        Some(b"www.example")
    }
    fn method(&self) -> &[u8] {
        b"GET"
    }
    fn header(&self, _: &str) -> Option<&[u8]> {
        None
    }
    fn cookie(&self, _: &str) -> Option<&[u8]> {
        None
    }
    fn peer(&self) -> Option<IpAddr> {
        None
    }
}

#[test]
fn fifty_prefixed_rules_and_a_miss_allocate_nothing() {
    let mut text = String::new();
    for n in 0..50 {
        text += &format!("[[rewrite]]\npattern = \"^/legacy-{n}/(.*)$\"\nto = \"/new-{n}/$1\"\n");
    }
    // Without a literal prefix: the regex runs on every request.
    text += "[[rewrite]]\npattern = \"\\\\.bak$\"\nanswer = \"\"\nstatus = 404\n";
    text += "[[rewrite]]\npattern = \"(?i)^/WP-\"\nanswer = \"\"\nstatus = 403\n";
    let cfg = Config::parse(&text, Path::new("ringside.toml")).unwrap();
    let rules = &cfg.rewrites.server;
    assert_eq!(rules.len(), 52);
    assert!(rules[..50]
        .iter()
        .all(|r| r.prefix.starts_with(b"/legacy-")));
    assert!(rules[50].prefix.is_empty());
    // The rules work: these are found.
    let at = |r: &Req| find(rules, r).map(|f| rules.iter().position(|q| q == f).unwrap());
    assert_eq!(at(&Req("/legacy-37/a")), Some(37));
    assert_eq!(at(&Req("/x.bak")), Some(50));
    assert_eq!(at(&Req("/wp-login.php")), Some(51));
    // Warm: each regex's matcher builds its cache on its first use.
    let misses = [
        Req("/api/users/42"),
        Req("/legacy-7"),
        Req("/legacy-"),
        Req("/"),
    ];
    for r in &misses {
        assert_eq!(at(r), None, "{}", r.0);
    }
    // A level of the fifty alone is passed over by their shared prefix.
    let legacy = Level::new(&rules[..50]);
    let all = Level::new(rules);
    assert!(legacy.find(&Req("/legacy-49/x")).is_some());
    assert!(all.find(&Req("/x.bak")).is_some());
    // A clone's regexes warm their own caches.
    for r in &misses {
        assert!(all.find(r).is_none() && legacy.find(r).is_none());
    }
    count_here(true);
    let before = allocations();
    let mut found = 0;
    for _ in 0..10_000 {
        for r in &misses {
            found += usize::from(find(rules, r).is_some());
            found += usize::from(all.find(r).is_some());
            found += usize::from(legacy.find(r).is_some());
        }
    }
    let made = allocations() - before;
    count_here(false);
    assert_eq!(found, 0);
    assert_eq!(
        made, 0,
        "{made} allocations for 120,000 requests no rule matched"
    );
}
