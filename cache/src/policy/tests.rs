//! The rules as tables: each row a response (and a request) and what
//! RFC 9111 says of it.

use super::*;

const LIMITS: Limits = Limits {
    heuristic_percent: 10,
    heuristic_max: 86_400,
    stale_while_revalidate_max: 86_400,
    stale_if_error_max: 86_400,
};
const GET: RequestFacts = RequestFacts {
    get: true,
    authorization: false,
    no_store: false,
};
/// A fixed "now": Sun, 06 Dec 2026 08:00:00 GMT.
const NOW: u64 = 1_796_544_000;

fn pairs<'a>(h: &'a [(&'a str, &'a str)]) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone {
    h.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()))
}

fn date(secs: u64) -> String {
    let mut b = [0u8; 29];
    ringside_http::date::format_imf_fixdate(secs, &mut b);
    String::from_utf8(b.to_vec()).unwrap()
}

/// A request, a status, the response's fields, the verdict.
type StorableRow = (
    RequestFacts,
    u16,
    &'static [(&'static str, &'static str)],
    Result<(), NotStored>,
);
/// A status, the response's fields, its lifetime.
type LifetimeRow<'a> = (u16, Vec<(&'a str, &'a str)>, u64);

#[test]
fn directives_table() {
    let rows: &[(&str, Directives)] = &[
        (
            "max-age=60",
            Directives {
                max_age: Some(60),
                ..Default::default()
            },
        ),
        (
            "MAX-AGE=60",
            Directives {
                max_age: Some(60),
                ..Default::default()
            },
        ),
        (
            "max-age=\"60\"",
            Directives {
                max_age: Some(60),
                ..Default::default()
            },
        ),
        (
            "max-age=60, max-age=10",
            Directives {
                max_age: Some(60),
                ..Default::default()
            },
        ),
        (
            "max-age=-1",
            Directives {
                max_age: Some(0),
                ..Default::default()
            },
        ),
        (
            "max-age=1.5",
            Directives {
                max_age: Some(0),
                ..Default::default()
            },
        ),
        (
            "max-age=99999999999999999999",
            Directives {
                max_age: Some(1 << 31),
                ..Default::default()
            },
        ),
        (
            "no-cache=\"a, b\", public",
            Directives {
                no_cache: true,
                public: true,
                ..Default::default()
            },
        ),
        (
            "private, s-maxage=5",
            Directives {
                private: true,
                s_maxage: Some(5),
                ..Default::default()
            },
        ),
        (
            "max-stale",
            Directives {
                max_stale: Some(u64::MAX),
                ..Default::default()
            },
        ),
        (
            " , no-store ,, ",
            Directives {
                no_store: true,
                ..Default::default()
            },
        ),
        (
            "stale-while-revalidate=30, stale-if-error=60",
            Directives {
                stale_while_revalidate: Some(30),
                stale_if_error: Some(60),
                ..Default::default()
            },
        ),
    ];
    for (value, want) in rows {
        assert_eq!(Directives::parse([value.as_bytes()]), *want, "{value}");
    }
}

#[test]
fn targeted_fields_outrank_cache_control() {
    let h = [
        ("Cache-Control", "no-store"),
        ("CDN-Cache-Control", "max-age=60"),
    ];
    let (d, targeted) = Directives::of_response(pairs(&h));
    assert!(targeted && !d.no_store && d.max_age == Some(60));
    let h = [
        ("CDN-Cache-Control", "max-age=60"),
        ("Ringside-Cache-Control", "max-age=5"),
    ];
    assert_eq!(Directives::of_response(pairs(&h)).0.max_age, Some(5));
    // A string where seconds go is the wrong type: the field is invalid.
    let h = [
        ("Cache-Control", "no-store"),
        ("CDN-Cache-Control", "max-age=\"60\""),
    ];
    assert!(Directives::of_response(pairs(&h)).0.no_store);
    // An invalid targeted value is as if absent.
    let h = [
        ("Cache-Control", "max-age=7"),
        ("CDN-Cache-Control", "Max-Age=60"),
    ];
    assert_eq!(
        Directives::of_response(pairs(&h)),
        (
            Directives {
                max_age: Some(7),
                ..Default::default()
            },
            false
        )
    );
}

#[test]
fn storable_table() {
    use NotStored::*;
    let auth = RequestFacts {
        authorization: true,
        ..GET
    };
    let rows: &[StorableRow] = &[
        (GET, 200, &[], Ok(())),
        (GET, 200, &[("Cache-Control", "no-store")], Err(NoStore)),
        (
            GET,
            200,
            &[("Cache-Control", "private, max-age=60")],
            Err(Private),
        ),
        (
            GET,
            200,
            &[("Cache-Control", "max-age=60"), ("Set-Cookie", "a=b")],
            Err(SetCookie),
        ),
        (GET, 200, &[("Vary", "Accept, *")], Err(VaryStar)),
        (GET, 302, &[], Err(NoFreshness)),
        (GET, 302, &[("Cache-Control", "max-age=60")], Ok(())),
        (
            GET,
            302,
            &[("Expires", "Thu, 01 Dec 2099 16:00:00 GMT")],
            Ok(()),
        ),
        (GET, 206, &[("Cache-Control", "max-age=60")], Err(Status)),
        (GET, 304, &[("Cache-Control", "max-age=60")], Err(Status)),
        (GET, 404, &[], Ok(())),
        (GET, 500, &[], Err(NoFreshness)),
        (
            auth,
            200,
            &[("Cache-Control", "max-age=60")],
            Err(Authorization),
        ),
        (auth, 200, &[("Cache-Control", "public")], Ok(())),
        (auth, 200, &[("Cache-Control", "s-maxage=60")], Ok(())),
        (
            auth,
            200,
            &[("Cache-Control", "must-revalidate, max-age=60")],
            Ok(()),
        ),
        (
            RequestFacts { get: false, ..GET },
            200,
            &[("Cache-Control", "max-age=60")],
            Err(Method),
        ),
        (
            RequestFacts {
                no_store: true,
                ..GET
            },
            200,
            &[("Cache-Control", "max-age=60")],
            Err(NoStore),
        ),
        (
            GET,
            200,
            &[("Cache-Control", "no-store, must-understand")],
            Ok(()),
        ),
        (
            GET,
            299,
            &[("Cache-Control", "no-store, must-understand, max-age=60")],
            Err(Status),
        ),
    ];
    for (req, status, h, want) in rows {
        assert_eq!(storable(*req, *status, pairs(h)), *want, "{status} {h:?}");
    }
}

#[test]
fn lifetime_table() {
    let d = date(NOW);
    let old = date(NOW - 7200);
    let in_an_hour = date(NOW + 3600);
    let lm_ten_days = date(NOW - 864_000);
    let lm_year = date(NOW - 365 * 86_400);
    let rows: Vec<LifetimeRow> = vec![
        (200, vec![("Date", &d), ("Cache-Control", "max-age=60")], 60),
        (
            200,
            vec![("Date", &d), ("Cache-Control", "max-age=60, s-maxage=5")],
            5,
        ),
        (200, vec![("Date", &d), ("Expires", &in_an_hour)], 3600),
        (
            200,
            vec![
                ("Date", &d),
                ("Expires", &in_an_hour),
                ("Cache-Control", "max-age=5"),
            ],
            5,
        ),
        (200, vec![("Date", &d), ("Expires", "0")], 0),
        (
            200,
            vec![("Date", &d), ("Last-Modified", &lm_ten_days)],
            86_400,
        ),
        (200, vec![("Date", &d), ("Last-Modified", &lm_year)], 86_400),
        (302, vec![("Date", &d), ("Last-Modified", &lm_ten_days)], 0),
        // Expires is ignored once a targeted field decides.
        (
            200,
            vec![
                ("Date", &d),
                ("Expires", &in_an_hour),
                ("CDN-Cache-Control", "no-cache"),
            ],
            0,
        ),
        (200, vec![("Date", &old), ("Expires", &in_an_hour)], 10_800),
    ];
    for (status, h, want) in rows {
        let m = Meta::of(status, pairs(&h), NOW, NOW, &LIMITS);
        assert_eq!(m.lifetime, want, "{status} {h:?}");
    }
}

#[test]
fn age_is_reckoned_as_section_4_2_3_says() {
    let old = date(NOW - 7200);
    // The Date says the response is two hours old already.
    let m = Meta::of(
        200,
        pairs(&[("Date", &old), ("Cache-Control", "max-age=3600")]),
        NOW,
        NOW,
        &LIMITS,
    );
    assert_eq!(m.age(NOW), 7200);
    assert!(!m.fresh(NOW));
    // An upstream's Age, plus the time the request took.
    let d = date(NOW);
    let h = [
        ("Date", d.as_str()),
        ("Age", "30"),
        ("Cache-Control", "max-age=60"),
    ];
    let m = Meta::of(200, pairs(&h), NOW - 2, NOW, &LIMITS);
    assert_eq!(m.age(NOW + 10), 42);
    // Invalid Age values are ignored; a list counts by its first member.
    for (age, want) in [("-5", 0), ("1.5", 0), ("abc", 0), ("7, 100", 7)] {
        let h = [("Date", d.as_str()), ("Age", age)];
        assert_eq!(
            Meta::of(200, pairs(&h), NOW, NOW, &LIMITS).age(NOW),
            want,
            "{age}"
        );
    }
}

#[test]
fn usable_table() {
    let meta = |cc: &str| {
        let d = date(NOW);
        Meta::of(
            200,
            pairs(&[("Date", &d), ("Cache-Control", cc)]),
            NOW,
            NOW,
            &LIMITS,
        )
    };
    let req = |cc: &str| Directives::parse([cc.as_bytes()]);
    use Usable::*;
    let rows: &[(&str, &str, u64, Usable)] = &[
        ("max-age=60", "", 10, Fresh),
        ("max-age=60", "", 60, Validate),
        ("max-age=60", "no-cache", 10, Validate),
        ("max-age=60", "max-age=5", 10, Validate),
        ("max-age=60", "max-age=20", 10, Fresh),
        ("max-age=60", "min-fresh=55", 10, Validate),
        ("max-age=60", "max-stale=30", 80, Stale { refresh: false }),
        ("max-age=60", "max-stale", 8000, Stale { refresh: false }),
        ("max-age=60, must-revalidate", "max-stale", 80, Validate),
        ("s-maxage=60", "max-stale", 80, Validate),
        (
            "max-age=60, stale-while-revalidate=30",
            "",
            80,
            Stale { refresh: true },
        ),
        ("max-age=60, stale-while-revalidate=30", "", 95, Validate),
        ("max-age=60, no-cache", "", 10, Validate),
    ];
    for (cc, rcc, after, want) in rows {
        assert_eq!(
            usable(&meta(cc), &req(rcc), NOW + after),
            *want,
            "{cc} / {rcc} after {after}s"
        );
    }
    let m = meta("max-age=60, stale-if-error=30");
    assert!(m.serves_on_error(NOW + 80) && !m.serves_on_error(NOW + 100));
    assert!(!meta("max-age=60, stale-if-error=30, must-revalidate").serves_on_error(NOW + 80));
}

#[test]
fn invalidating_methods() {
    assert!(invalidates(b"POST", 201) && invalidates(b"DELETE", 204) && invalidates(b"PUT", 303));
    assert!(!invalidates(b"POST", 500) && !invalidates(b"GET", 200) && !invalidates(b"POST", 404));
}

#[test]
fn a_304_replaces_the_fields_it_carries_but_not_the_bodys() {
    let stored = [
        ("Content-Type", "text/plain"),
        ("Cache-Control", "max-age=1"),
        ("Content-Encoding", "gzip"),
        ("X-A", "1"),
    ];
    let fresh = [
        ("Cache-Control", "max-age=60"),
        ("Content-Encoding", "br"),
        ("X-B", "2"),
        ("Age", "5"),
    ];
    let got: Vec<_> = updated_by_304(pairs(&stored), pairs(&fresh))
        .into_iter()
        .map(|(n, v)| {
            (
                std::str::from_utf8(n).unwrap(),
                std::str::from_utf8(v).unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("Content-Type", "text/plain"),
            ("Content-Encoding", "gzip"),
            ("X-A", "1"),
            ("Cache-Control", "max-age=60"),
            ("X-B", "2")
        ]
    );
}

#[test]
fn vary_keys() {
    let names = vary::names(pairs(&[
        ("Vary", "Accept-Language, accept-encoding"),
        ("Vary", "Accept-Language"),
    ]));
    assert_eq!(names.len(), 2);
    let k = |h: &[(&str, &str)]| vary::secondary(&names, pairs(h));
    assert_eq!(
        k(&[("Accept-Language", "en, fr")]),
        k(&[("accept-language", " en ,fr ")])
    );
    assert_ne!(
        k(&[("Accept-Language", "en")]),
        k(&[("Accept-Language", "fr")])
    );
    assert_ne!(k(&[("Accept-Language", "en")]), k(&[]));
    // Accept-Encoding counts by what this server could send.
    assert_eq!(
        k(&[("Accept-Encoding", "gzip, deflate")]),
        k(&[("Accept-Encoding", "deflate;q=0.5, gzip")])
    );
    assert_ne!(
        k(&[("Accept-Encoding", "gzip")]),
        k(&[("Accept-Encoding", "br")])
    );
    assert!(vary::is_star(pairs(&[("Vary", "a, *")])));
}

#[test]
fn expires_is_read_leniently() {
    let want =
        ringside_http::semantics::conditional::parse_http_date(b"Mon, 08 Aug 2050 02:01:18 GMT");
    assert!(want.is_some());
    for v in [
        "Mon, 08 Aug 2050 02:01:18 GMT",
        "mon, 08 aug 2050 02:01:18 gmt",
        "Thu, 08 Aug 2050 02:01:18 GMT",
        "Thu Aug  8 02:01:18 2050",
    ] {
        assert_eq!(lenient_date(v.as_bytes()), want, "{v}");
    }
    assert_eq!(lenient_date(b"0"), None);
    assert_eq!(lenient_date(b"Mon, 32 Aug 2050 02:01:18 GMT"), None);
}
