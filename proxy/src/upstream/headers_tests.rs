use super::*;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Nothing of the proxy's own, and names with `_` passed (their
/// default, dropping, has a test of its own).
const OFF: ForwardHeaders = ForwardHeaders {
    x_forwarded: false,
    forwarded: false,
    trusted_forwarders: Vec::new(),
    via: None,
    underscores: Underscores::Pass,
};
/// `OFF` where a reference must outlive its statement.
static OFF_REF: ForwardHeaders = OFF;
const V4: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7));

#[test]
fn addresses_are_written_as_std_displays_them() {
    let all = [
        IpAddr::V4(Ipv4Addr::new(0, 0, 0, 0)),
        IpAddr::V4(Ipv4Addr::new(255, 255, 255, 255)),
        IpAddr::V4(Ipv4Addr::new(10, 0, 100, 9)),
        IpAddr::V6(Ipv6Addr::LOCALHOST),
        IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
    ];
    for ip in all {
        let mut out = BytesMut::new();
        put_ip(&mut out, ip);
        assert_eq!(&out[..], ip.to_string().as_bytes());
    }
}

/// A client's header fields, (name, value) in order.
type Fields<'a> = &'a [(&'a str, &'a str)];
/// Lines of the head that was sent.
type Lines<'a> = &'a [&'a str];
/// (prefix, replace, path, query, request-target sent)
type Rewrite<'a> = (&'a str, Option<&'a str>, &'a str, Option<&'a str>, &'a str);

fn base<'a>(settings: &'a ForwardHeaders) -> Forward<'a> {
    Forward {
        method: b"GET",
        path: b"/x",
        query: None,
        prefix: b"/",
        replace_prefix: None,
        host: b"backend:8080",
        client_host: Some(b"example.com"),
        client_ip: V4,
        client_unix: false,
        proto: "http",
        body: ReqBody::None,
        upgrade: &[],
        early_data: false,
        settings,
    }
}

/// The head written for `f` and `headers`, as text.
fn head(f: &Forward<'_>, headers: Fields<'_>) -> String {
    let mut out = BytesMut::new();
    let iter = headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()));
    write_request_head(&mut out, f, iter);
    let text = String::from_utf8(out.to_vec()).unwrap();
    assert!(text.ends_with("\r\n\r\n"), "{text:?}");
    text
}

/// The header lines after the request line.
fn lines(text: &str) -> Vec<&str> {
    text.trim_end_matches("\r\n")
        .split("\r\n")
        .skip(1)
        .collect()
}

/// The lines of field `name` (case-insensitive).
fn field<'t>(text: &'t str, name: &str) -> Vec<&'t str> {
    lines(text)
        .into_iter()
        .filter(|l| l.split(':').next().unwrap().eq_ignore_ascii_case(name))
        .collect()
}

#[test]
fn whole_head() {
    let settings = ForwardHeaders {
        x_forwarded: true,
        forwarded: true,
        trusted_forwarders: Vec::new(),
        via: Some("ringside".into()),
        underscores: Underscores::Drop,
    };
    let f = Forward {
        method: b"POST",
        path: b"/api/items",
        query: Some(b"a=1&b"),
        prefix: b"/api/",
        replace_prefix: Some(b"/"),
        body: ReqBody::Length(12),
        ..base(&settings)
    };
    let h = [
        ("Host", "example.com"),
        ("Accept", "*/*"),
        ("Connection", "keep-alive"),
        ("Content-Length", "12"),
        ("Expect", "100-continue"),
        ("X-Forwarded-For", "203.0.113.9"),
    ];
    assert_eq!(
        head(&f, &h),
        "POST /items?a=1&b HTTP/1.1\r\n\
             Host: backend:8080\r\n\
             Accept: */*\r\n\
             Content-Length: 12\r\n\
             X-Forwarded-For: 203.0.113.9, 192.0.2.7\r\n\
             X-Forwarded-Proto: http\r\n\
             X-Forwarded-Host: example.com\r\n\
             Forwarded: for=192.0.2.7;proto=http;host=example.com\r\n\
             Via: 1.1 ringside\r\n\
             \r\n"
    );
}

#[test]
fn path_rewrite_table() {
    #[rustfmt::skip]
        let cases: &[Rewrite<'_>] = &[
            ("/api/", None,          "/api/x",     None,        "/api/x"),
            ("/api/", Some("/"),     "/api/x",     None,        "/x"),
            ("/api/", Some("/"),     "/api/x/y",   Some("q=1"), "/x/y?q=1"),
            ("/api/", Some("/"),     "/api/",      None,        "/"),
            ("/api/", Some("/"),     "/api",       None,        "/"),
            ("/api/", Some("/"),     "/api",       Some("q"),   "/?q"),
            ("/api/", Some("/v2/"),  "/api/x",     None,        "/v2/x"),
            ("/api/", Some("/v2"),   "/api/x",     None,        "/v2x"),
            ("/api/", Some(""),      "/api/x",     None,        "/x"),
            ("/api/", Some(""),      "/api/",      None,        "/"),
            ("/api/", Some("/"),     "/apix",      None,        "/apix"),
            ("/api/", Some("/"),     "/other/api/", None,       "/other/api/"),
            ("/api/", Some("/"),     "/API/x",     None,        "/API/x"),
            ("/api",  Some("/"),     "/api/x",     None,        "/x"),
            ("/api",  Some("/"),     "/api",       None,        "/"),
            ("/api",  Some("/v2"),   "/api/x",     None,        "/v2/x"),
            ("/api",  Some("/v2/"),  "/api",       None,        "/v2/"),
            ("/api",  Some("v2"),    "/api/x",     None,        "/v2/x"),
            ("/",     Some("/base/"), "/x",        None,        "/base/x"),
            ("/",     Some("/base/"), "/",         None,        "/base/"),
            ("/a%2F/", Some("/"),    "/a%2F/x",    None,        "/x"),
            ("/a%2F/", Some("/"),    "/a%2f/x",    None,        "/a%2f/x"),
            ("/",     None,          "/x",         Some(""),    "/x?"),
        ];
    for (prefix, replace, path, query, want) in cases {
        let f = Forward {
            prefix: prefix.as_bytes(),
            replace_prefix: replace.map(str::as_bytes),
            path: path.as_bytes(),
            query: query.map(str::as_bytes),
            ..base(&OFF_REF)
        };
        let text = head(&f, &[]);
        let line = text.split("\r\n").next().unwrap();
        assert_eq!(
            line,
            format!("GET {want} HTTP/1.1"),
            "{prefix} {replace:?} {path}"
        );
    }
}

#[test]
fn removal_table() {
    #[rustfmt::skip]
        let cases: &[(Fields<'_>, Lines<'_>)] = &[
            // (client headers, the client's lines that go upstream)
            (&[("Accept", "*/*"), ("X-A", "1")], &["Accept: */*", "X-A: 1"]),
            (&[("Host", "example.com"), ("HOST", "evil")], &[]),
            (&[("Connection", "close")], &[]),
            (&[("Connection", "close, X-Secret"), ("X-Secret", "1"), ("Accept", "*/*")], &["Accept: */*"]),
            (&[("x-secret", "1"), ("Connection", "X-SECRET"), ("X-Secrets", "2")], &["X-Secrets: 2"]),
            (&[("Connection", "a"), ("Connection", " ,b ,"), ("A", "1"), ("B", "2"), ("C", "3")], &["C: 3"]),
            (&[("Keep-Alive", "timeout=5"), ("TE", "trailers"), ("Trailer", "X"), ("Proxy-Connection", "keep-alive")], &[]),
            (&[("Upgrade", "websocket"), ("Expect", "100-continue")], &[]),
            (&[("Content-Length", "5"), ("Transfer-Encoding", "chunked")], &[]),
            (&[("Cookie", "a=1"), ("Cookie", "b=2")], &["Cookie: a=1", "Cookie: b=2"]),
            (&[("Trailers", "x"), ("TEX", "y")], &["Trailers: x", "TEX: y"]),
            // look-alikes of framing fields that a CGI-style backend would merge
            (&[("Content_Length", "9"), ("transfer_encoding", "chunked"), ("HOST_", "x"), ("X_Id", "1"), ("Connection_", "y")],
             &["HOST_: x", "X_Id: 1", "Connection_: y"]),
            // with the forwarding headers off, the client's pass as sent,
            // but for a Forwarded from an untrusted client
            (&[("X-Forwarded-For", "1.2.3.4"), ("X-Forwarded-Host", "h"), ("Forwarded", "for=a"), ("Via", "1.0 p")],
             &["X-Forwarded-For: 1.2.3.4", "X-Forwarded-Host: h", "Via: 1.0 p"]),
            // more tokens than kept inline: the rest are still honoured
            (&[("Connection", "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r"), ("R", "1"), ("A", "2"), ("S", "3")], &["S: 3"]),
        ];
    for (headers, want) in cases {
        let text = head(&base(&OFF_REF), headers);
        let got = lines(&text);
        assert_eq!(got[0], "Host: backend:8080", "{headers:?}");
        assert_eq!(&got[1..], *want, "{headers:?}");
    }
}

#[test]
fn framing_table() {
    #[rustfmt::skip]
        let cases: &[(ReqBody, Fields<'_>, Lines<'_>)] = &[
            // (body, client headers, the framing lines sent)
            (ReqBody::None,       &[], &[]),
            (ReqBody::Length(0),  &[], &["Content-Length: 0"]),
            (ReqBody::Length(42), &[("Content-Length", "42")], &["Content-Length: 42"]),
            (ReqBody::Chunked,    &[("Transfer-Encoding", "chunked")], &["Transfer-Encoding: chunked"]),
            // smuggling-ish: whatever framing text the client sent is gone
            (ReqBody::Length(7),  &[("Content-Length", "7"), ("transfer-encoding", "chunked"), ("CONTENT-LENGTH", "99")], &["Content-Length: 7"]),
            (ReqBody::Chunked,    &[("Content-Length", "99"), ("Transfer-Encoding", "gzip, chunked"), ("Connection", "content-length")], &["Transfer-Encoding: chunked"]),
            (ReqBody::None,       &[("Content-Length", "5"), ("Transfer-Encoding", "chunked")], &[]),
        ];
    for (body, headers, want) in cases {
        let f = Forward {
            body: *body,
            ..base(&OFF_REF)
        };
        let text = head(&f, headers);
        let mut got = field(&text, "content-length");
        got.extend(field(&text, "transfer-encoding"));
        assert_eq!(got, *want, "{body:?} {headers:?}");
        assert!(!text.contains("99") && !text.contains("gzip"), "{text:?}");
    }
}

#[test]
fn x_forwarded_table() {
    let on = ForwardHeaders {
        x_forwarded: true,
        ..OFF
    };
    let v6 = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1));
    let mapped = IpAddr::V6(Ipv4Addr::new(198, 51, 100, 1).to_ipv6_mapped());
    #[rustfmt::skip]
        let cases: &[(IpAddr, Fields<'_>, &str)] = &[
            // (client ip, client headers, the X-Forwarded-For sent)
            (V4,     &[], "X-Forwarded-For: 192.0.2.7"),
            (v6,     &[], "X-Forwarded-For: 2001:db8::1"),
            (mapped, &[], "X-Forwarded-For: 198.51.100.1"),
            (V4,     &[("X-Forwarded-For", "10.0.0.1")], "X-Forwarded-For: 10.0.0.1, 192.0.2.7"),
            (V4,     &[("x-forwarded-for", "10.0.0.1, 10.0.0.2"), ("Accept", "*/*"), ("X-Forwarded-For", "10.0.0.3")],
                     "X-Forwarded-For: 10.0.0.1, 10.0.0.2, 10.0.0.3, 192.0.2.7"),
            (V4,     &[("X-Forwarded-For", "")], "X-Forwarded-For: 192.0.2.7"),
            (V4,     &[("X-Forwarded-For", "10.0.0.1"), ("Connection", "X-Forwarded-For")], "X-Forwarded-For: 192.0.2.7"),
        ];
    for (ip, headers, want) in cases {
        let f = Forward {
            client_ip: *ip,
            ..base(&on)
        };
        let text = head(&f, headers);
        assert_eq!(field(&text, "x-forwarded-for"), [*want], "{ip} {headers:?}");
    }
    // Ours replace the client's -Proto and -Host; no client Host, no -Host.
    let h = [
        ("X-Forwarded-Proto", "https"),
        ("X-Forwarded-Host", "spoof"),
    ];
    let text = head(&base(&on), &h);
    assert_eq!(
        field(&text, "x-forwarded-proto"),
        ["X-Forwarded-Proto: http"]
    );
    assert_eq!(
        field(&text, "x-forwarded-host"),
        ["X-Forwarded-Host: example.com"]
    );
    let text = head(
        &Forward {
            client_host: None,
            ..base(&on)
        },
        &h,
    );
    assert_eq!(field(&text, "x-forwarded-host"), Vec::<&str>::new());
}

#[test]
fn forwarded_table() {
    let on = ForwardHeaders {
        forwarded: true,
        trusted_forwarders: Cidr::parse("192.0.2.0/24").unwrap(),
        ..OFF
    };
    let v6 = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1));
    #[rustfmt::skip]
        let cases: &[(IpAddr, Option<&str>, Fields<'_>, &str)] = &[
            // An untrusted client's own values are dropped.
            (v6, None, &[("Forwarded", "for=10.0.0.1")], "Forwarded: for=\"[2001:db8::1]\";proto=http"),
            // (client ip, client Host, client headers, the Forwarded sent)
            (V4, Some("example.com"), &[], "Forwarded: for=192.0.2.7;proto=http;host=example.com"),
            (v6, Some("example.com"), &[], "Forwarded: for=\"[2001:db8::1]\";proto=http;host=example.com"),
            (V4, Some("example.com:8080"), &[], "Forwarded: for=192.0.2.7;proto=http;host=\"example.com:8080\""),
            (V4, Some("[::1]:80"), &[], "Forwarded: for=192.0.2.7;proto=http;host=\"[::1]:80\""),
            (V4, Some("a\"b\\c"), &[], "Forwarded: for=192.0.2.7;proto=http;host=\"a\\\"b\\\\c\""),
            (V4, None, &[], "Forwarded: for=192.0.2.7;proto=http"),
            (V4, Some(""), &[], "Forwarded: for=192.0.2.7;proto=http"),
            (V4, None, &[("Forwarded", "for=10.0.0.1"), ("forwarded", "for=\"[::2]\";by=x")],
                 "Forwarded: for=10.0.0.1, for=\"[::2]\";by=x, for=192.0.2.7;proto=http"),
        ];
    for (ip, client_host, headers, want) in cases {
        let f = Forward {
            client_ip: *ip,
            client_host: client_host.map(str::as_bytes),
            ..base(&on)
        };
        let text = head(&f, headers);
        assert_eq!(field(&text, "forwarded"), [*want], "{ip} {client_host:?}");
        assert!(field(&text, "x-forwarded-for").is_empty());
    }
}

#[test]
fn a_clients_forwarded_goes_on_only_from_a_trusted_address() {
    let off = ForwardHeaders {
        trusted_forwarders: Cidr::parse("192.0.2.7").unwrap(),
        ..OFF
    };
    let h = [("Forwarded", "for=6.6.6.6")];
    let trusted = head(&base(&off), &h);
    assert_eq!(field(&trusted, "forwarded"), ["Forwarded: for=6.6.6.6"]);
    let other = Forward {
        client_ip: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 8)),
        ..base(&off)
    };
    assert!(field(&head(&other, &h), "forwarded").is_empty());
    assert!(field(&head(&base(&OFF_REF), &h), "forwarded").is_empty());
}

#[test]
fn via_table() {
    #[rustfmt::skip]
        let cases: &[(Option<&str>, Fields<'_>, Lines<'_>)] = &[
            // (pseudonym, client headers, the Via lines sent)
            (Some("ringside"), &[], &["Via: 1.1 ringside"]),
            (Some("edge-1"), &[("Via", "1.0 fred, 1.1 p.example.net")], &["Via: 1.0 fred, 1.1 p.example.net, 1.1 edge-1"]),
            (Some("ringside"), &[("Via", "1.1 a"), ("via", "1.1 b")], &["Via: 1.1 a, 1.1 b, 1.1 ringside"]),
            (None, &[("Via", "1.1 a")], &["Via: 1.1 a"]),
            (None, &[], &[]),
        ];
    for (via, headers, want) in cases {
        let settings = ForwardHeaders {
            via: via.map(String::from),
            ..OFF
        };
        let text = head(&base(&settings), headers);
        assert_eq!(field(&text, "via"), *want, "{via:?} {headers:?}");
    }
}

/// RFC 8470 §5.1: ours for a request from early data, a client's as sent.
#[test]
fn early_data_table() {
    #[rustfmt::skip]
        let cases: &[(bool, Fields<'_>, Lines<'_>)] = &[
            (false, &[], &[]),
            (true, &[], &["Early-Data: 1"]),
            (false, &[("Early-Data", "1")], &["Early-Data: 1"]),
            (true, &[("early-data", "1")], &["early-data: 1"]),
        ];
    for (early, headers, want) in cases {
        let mut f = base(&OFF_REF);
        f.early_data = *early;
        assert_eq!(
            field(&head(&f, headers), "early-data"),
            *want,
            "{headers:?}"
        );
    }
}

/// Via names the protocol the request came in (RFC 9110 §7.6.3).
#[test]
fn via_names_the_version_received() {
    let settings = ForwardHeaders {
        via: Some("ringside".into()),
        ..OFF
    };
    for (v, want) in [
        (ringside_http::Version::Http10, "Via: 1.0 ringside"),
        (ringside_http::Version::Http11, "Via: 1.1 ringside"),
        (ringside_http::Version::Http2, "Via: 1.1 a, 2 ringside"),
    ] {
        let client: &[(&[u8], &[u8])] = match v {
            ringside_http::Version::Http2 => &[(b"via", b"1.1 a")],
            _ => &[],
        };
        let mut out = BytesMut::new();
        let f = base(&settings);
        write_request_head_from(&mut out, &f, v.via_protocol(), client.iter().copied());
        let text = String::from_utf8(out.to_vec()).unwrap();
        assert_eq!(field(&text, "via"), [want], "{v:?}");
    }
}

#[test]
fn upgrade_table() {
    let listed = ["my-proto".to_string()];
    #[rustfmt::skip]
        let cases: &[(Fields<'_>, Lines<'_>)] = &[
            // (client headers, Connection and Upgrade lines sent)
            (&[("Connection", "Upgrade"), ("Upgrade", "websocket")], &["Connection: upgrade", "Upgrade: websocket"]),
            (&[("Connection", "keep-alive, Upgrade"), ("Upgrade", "WebSocket")], &["Connection: upgrade", "Upgrade: WebSocket"]),
            (&[("Connection", "upgrade"), ("Upgrade", "my-proto/2, websocket")], &["Connection: upgrade", "Upgrade: my-proto/2, websocket"]),
            // h2c is never passed on, nor a protocol the route does not list
            (&[("Connection", "Upgrade, HTTP2-Settings"), ("Upgrade", "h2c"), ("HTTP2-Settings", "AAMAAABkAAQAoAAAAAIAAAAA")], &[]),
            (&[("Connection", "upgrade"), ("Upgrade", "h2c, websocket")], &["Connection: upgrade", "Upgrade: websocket"]),
            (&[("Connection", "upgrade"), ("Upgrade", "other")], &[]),
            // an upgrade is only asked for with Connection: upgrade
            (&[("Upgrade", "websocket")], &[]),
            (&[("Connection", "close")], &[]),
            (&[("Connection", "keep-alive")], &[]),
        ];
    for (headers, want) in cases {
        let pairs = || headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()));
        let mut offered = [&b""[..]; 4];
        let n = upgrade_protocols(pairs(), &listed, &mut offered);
        let f = Forward {
            upgrade: &offered[..n],
            ..base(&OFF_REF)
        };
        let text = head(&f, headers);
        let mut got = field(&text, "connection");
        got.extend(field(&text, "upgrade"));
        assert_eq!(got, *want, "{headers:?}");
        assert!(field(&text, "http2-settings").is_empty(), "{text}");
    }
}

#[test]
fn a_101_must_switch_to_what_was_offered() {
    #[rustfmt::skip]
        let cases: &[(&str, &[&str], bool)] = &[
            ("websocket", &["websocket"], true),
            ("WebSocket", &["websocket"], true),
            ("my-proto/2", &["my-proto/2", "websocket"], true),
            ("h2c", &["websocket"], false),
            ("websocket, other", &["websocket"], false),
            ("", &["websocket"], false),
            ("websocket", &[], false),
        ];
    for (response, offered, want) in cases {
        let offered: Vec<&[u8]> = offered.iter().map(|o| o.as_bytes()).collect();
        assert_eq!(
            upgrade_agreed(response.as_bytes(), &offered),
            *want,
            "{response:?}"
        );
    }
}

#[test]
fn underscored_names_are_dropped_by_default() {
    let settings = ForwardHeaders {
        underscores: Underscores::Drop,
        ..OFF
    };
    let h = [
        ("X_Forwarded_For", "1.2.3.4"),
        ("X-Real", "1"),
        ("my_header", "2"),
    ];
    let text = head(&base(&settings), &h);
    assert_eq!(lines(&text), ["Host: backend:8080", "X-Real: 1"]);
}

#[test]
fn max_forwards_goes_on_decremented_for_trace_and_options() {
    #[rustfmt::skip]
        let cases: &[(&str, Fields<'_>, Lines<'_>)] = &[
            ("OPTIONS", &[("Max-Forwards", "3")], &["Max-Forwards: 2"]),
            ("TRACE", &[("max-forwards", "1")], &["Max-Forwards: 0"]),
            ("GET", &[("Max-Forwards", "3")], &["Max-Forwards: 3"]),
            ("OPTIONS", &[("Max-Forwards", "x")], &["Max-Forwards: x"]),
            ("OPTIONS", &[], &[]),
        ];
    for (method, headers, want) in cases {
        let f = Forward {
            method: method.as_bytes(),
            ..base(&OFF_REF)
        };
        let text = head(&f, headers);
        assert_eq!(field(&text, "max-forwards"), *want, "{method} {headers:?}");
    }
}

#[test]
fn skip_filter_table() {
    let listed = ConnectionTokens::from_values([&b"close, X-Secret"[..], b"upgrade"].into_iter());
    let none = ConnectionTokens::none();
    #[rustfmt::skip]
        let cases: &[(&str, &ConnectionTokens<'_>, bool, bool)] = &[
            // hop-by-hop
            ("Connection", &none, false, true),
            ("connection", &none, true, true),
            ("Keep-Alive", &none, false, true),
            ("TE", &none, false, true),
            ("Trailer", &none, false, true),
            ("Proxy-Connection", &none, false, true),
            ("Upgrade", &none, false, true),
            ("Upgrade", &none, true, false),
            ("upgrade", &listed, true, false),
            ("upgrade", &listed, false, true),
            // framing and the server's own
            ("Transfer-Encoding", &none, false, true),
            ("content-length", &none, false, true),
            ("Date", &none, false, true),
            ("SERVER", &none, false, true),
            // named by Connection
            ("X-Secret", &listed, false, true),
            ("x-secret", &listed, true, true),
            ("X-Secret", &none, false, false),
            ("close", &listed, false, true),
            // end-to-end
            ("Content-Type", &listed, false, false),
            ("Set-Cookie", &listed, false, false),
            ("Cache-Control", &none, false, false),
            ("X-Secrets", &listed, false, false),
            ("Trailers", &none, false, false),
            ("Location", &none, true, false),
        ];
    for (name, tokens, tunnel, want) in cases {
        assert_eq!(
            skip_response_header(name.as_bytes(), tokens, *tunnel),
            *want,
            "{name} tunnel={tunnel}"
        );
    }
}
