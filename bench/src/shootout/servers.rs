//! The servers of a shootout: how each front end is started for each kind
//! of scenario (from the templates in `deploy/bench/`), and the backends
//! behind them (an nginx origin, php-fpm, a Ruby WEBrick app). Over TLS
//! and HTTP/2 the front ends take what [`super::tls`] says.

use std::path::{Path, PathBuf};

use super::def::{FpmPool, Kind, Protocol};
use super::procs::{fill, find_binary, free_port, Proc, Scratch};
use super::tls::{self, Tls};

/// Where the repository's files are: templates, PHP scripts, the Ruby app.
pub struct Paths {
    pub templates: PathBuf,
    pub php_root: PathBuf,
    pub ruby_app: PathBuf,
    /// The `ringside` binary (beside this one).
    pub ringside: PathBuf,
}

impl Paths {
    pub fn from_repo(repo: &Path) -> Paths {
        // Without "..": with a root through "..", nginx in front of
        // php-fpm answered every script with a 3xx.
        let repo = &repo.canonicalize().unwrap_or_else(|_| repo.to_path_buf());
        let ringside = std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(|d| d.join("ringside")))
            .unwrap_or_else(|| PathBuf::from("ringside"));
        Paths {
            templates: repo.join("deploy/bench"),
            php_root: repo.join("proxy/tests/support/php"),
            ruby_app: repo.join("proxy/tests/support/webrick_app.rb"),
            ringside,
        }
    }
}

/// php-fpm's children: enough that nginx's kept connections (keepalive 8
/// per worker) and ringside's (all but one) never starve it.
pub const FPM_CHILDREN: usize = 16;

/// What a front end needs to know of the backend behind it.
#[derive(Clone, Debug)]
pub enum Behind {
    /// Static files from this root.
    Files(PathBuf),
    /// An HTTP server on this loopback port.
    Http(u16),
    /// php-fpm on this loopback port, scripts beneath this root.
    FastCgi(u16, PathBuf),
}

/// Why a server cannot take part at all: not installed (with the package
/// that brings it).
pub fn missing(server: &str, paths: &Paths) -> Option<String> {
    let (names, package): (&[&str], &str) = match server {
        "ringside" => {
            return (!paths.ringside.is_file()).then(|| {
                format!(
                    "{} not built: cargo build --release",
                    paths.ringside.display()
                )
            })
        }
        "nginx" => (&["nginx"], "nginx-light"),
        "lighttpd" => (&["lighttpd"], "lighttpd"),
        "haproxy" => (&["haproxy"], "haproxy"),
        "apache" => (&["apache2", "httpd"], "apache2"),
        "h2o" => (&["h2o"], "h2o"),
        _ => return Some("unknown server".into()),
    };
    find_binary(names)
        .is_none()
        .then(|| format!("not installed: apt-get install {package}"))
}

/// Whether `server` takes part in scenarios of `kind` over `protocol`.
pub fn serves(server: &str, kind: Kind, protocol: Protocol) -> bool {
    match server {
        // HAProxy serves no files and speaks no FastCGI (it does in 2.1+,
        // but its connection reuse with php-fpm hangs: haproxy #2936).
        "haproxy" => matches!(kind, Kind::Proxy | Kind::Ruby),
        // lighttpd's TLS is a module of its own package
        // (lighttpd-mod-openssl), and Apache's needs mod_ssl and mod_http2
        // set up: neither is configured for shootouts yet.
        "lighttpd" | "apache" => protocol == Protocol::Http,
        _ => true,
    }
}

/// How a front end listens: its port, what the client speaks, and the
/// certificate when that is over TLS.
#[derive(Clone, Copy, Debug)]
pub struct Listen<'a> {
    pub port: u16,
    pub protocol: Protocol,
    pub tls: Option<&'a Tls>,
}

/// Starts `server` with `workers` on `cpus` in front of `behind`,
/// listening for `protocol` (with `tls` when over TLS); returns it, its
/// port, and the scratch dir it lives in (drop after the process).
pub fn start_front(
    server: &str,
    workers: usize,
    cpus: &[usize],
    behind: &Behind,
    protocol: Protocol,
    tls: Option<&Tls>,
    paths: &Paths,
) -> Result<(Proc, u16, Scratch), String> {
    let dir = Scratch::new(server);
    let port = free_port();
    let listen = Listen {
        port,
        protocol,
        tls,
    };
    let argv = front_command(server, workers, behind, &listen, paths, &dir.0)?;
    let p = Proc::start(server, &argv, cpus, port, &dir.0)?;
    Ok((p, port, dir))
}

/// Writes `server`'s config into `dir` and returns the command that runs
/// it in the foreground.
pub fn front_command(
    server: &str,
    workers: usize,
    behind: &Behind,
    listen: &Listen,
    paths: &Paths,
    dir: &Path,
) -> Result<Vec<String>, String> {
    let port = listen.port;
    let protocol = listen.protocol;
    let prefix = dir.to_string_lossy().into_owned();
    let mut vars: Vec<(&str, String)> = vec![
        ("PORT", port.to_string()),
        ("PREFIX", prefix.clone()),
        ("WORKERS", workers.to_string()),
        ("MASTER", if workers > 1 { "on" } else { "off" }.into()),
        (
            "MAXWORKER",
            if workers > 1 {
                workers.to_string()
            } else {
                "0".into()
            },
        ),
        ("MAXREQ", (workers * 256).to_string()),
    ];
    let (kind, root) = match behind {
        Behind::Files(root) => ("static", root.clone()),
        Behind::Http(up) => {
            vars.push(("UPSTREAM_PORT", up.to_string()));
            ("proxy", dir.to_path_buf())
        }
        Behind::FastCgi(fpm, root) => {
            vars.push(("FCGI", format!("127.0.0.1:{fpm}")));
            vars.push(("FCGI_PORT", fpm.to_string()));
            vars.push(("KEEPCONN", "on".into()));
            vars.push(("IFKEEP", String::new()));
            ("fastcgi", root.clone())
        }
    };
    vars.push(("ROOT", root.to_string_lossy().into_owned()));
    let t = |name: &str| paths.templates.join(name);
    let argv: Vec<String> = match server {
        "ringside" if protocol.tls() => {
            let tls = listen.tls.ok_or("TLS needs a certificate")?;
            let conf = dir.join("ringside.toml");
            std::fs::write(&conf, tls::ringside_config(port, behind, tls)?)
                .map_err(|e| format!("{}: {e}", conf.display()))?;
            vec![
                path(&paths.ringside),
                "--workers".into(),
                workers.to_string(),
                "--config".into(),
                path(&conf),
            ]
        }
        // A plain listener serves h2c to a client that opens with the
        // preface, so h2c needs nothing more than plain http.
        "ringside" => {
            let mut a = vec![
                paths.ringside.to_string_lossy().into_owned(),
                "--listen".into(),
                format!("127.0.0.1:{port}"),
                "--workers".into(),
                workers.to_string(),
            ];
            match behind {
                Behind::Files(root) => {
                    a.extend(["--root".into(), root.to_string_lossy().into_owned()])
                }
                Behind::Http(up) => a.extend(["--upstream".into(), format!("127.0.0.1:{up}")]),
                Behind::FastCgi(fpm, root) => a.extend([
                    "--root".into(),
                    root.to_string_lossy().into_owned(),
                    "--fastcgi".into(),
                    format!("127.0.0.1:{fpm}"),
                ]),
            }
            a
        }
        "nginx" => {
            let template = if protocol == Protocol::Http {
                format!("nginx-{kind}.conf")
            } else {
                vars.extend(tls::nginx_vars(protocol, listen.tls, behind)?);
                "nginx-h2.conf".into()
            };
            let conf = fill(&t(&template), dir, "nginx.conf", &vars)?;
            vec![
                bin(&["nginx"])?,
                "-c".into(),
                path(&conf),
                "-p".into(),
                prefix.clone(),
            ]
        }
        "lighttpd" | "apache" if protocol != Protocol::Http => {
            return Err(format!("{server}: no {} config", protocol.name()))
        }
        "lighttpd" => {
            if let Behind::FastCgi(fpm, _) = behind {
                vars.retain(|(k, _)| *k != "FCGI");
                vars.push((
                    "FCGI",
                    format!("\"host\" => \"127.0.0.1\", \"port\" => {fpm}"),
                ));
            }
            let conf = fill(
                &t(&format!("lighttpd-{kind}.conf")),
                dir,
                "lighttpd.conf",
                &vars,
            )?;
            vec![bin(&["lighttpd"])?, "-D".into(), "-f".into(), path(&conf)]
        }
        "haproxy" if protocol != Protocol::Http => {
            vars.push(("BIND", tls::haproxy_bind(protocol, listen.tls)?));
            let conf = fill(&t("haproxy-proxy-h2.cfg"), dir, "haproxy.cfg", &vars)?;
            vec![bin(&["haproxy"])?, "-db".into(), "-f".into(), path(&conf)]
        }
        "haproxy" => {
            let conf = fill(&t("haproxy-proxy.cfg"), dir, "haproxy.cfg", &vars)?;
            vec![bin(&["haproxy"])?, "-db".into(), "-f".into(), path(&conf)]
        }
        "apache" => {
            let conf = fill(
                &t(&format!("apache-{kind}.conf")),
                dir,
                "apache.conf",
                &vars,
            )?;
            vec![
                bin(&["apache2", "httpd"])?,
                "-f".into(),
                path(&conf),
                "-DFOREGROUND".into(),
            ]
        }
        "h2o" if protocol != Protocol::Http => {
            vars.extend(tls::h2o_vars(protocol, listen.tls, behind)?);
            let conf = fill(&t("h2o-h2.conf"), dir, "h2o.conf", &vars)?;
            vec![bin(&["h2o"])?, "-c".into(), path(&conf)]
        }
        "h2o" => {
            let conf = fill(&t(&format!("h2o-{kind}.conf")), dir, "h2o.conf", &vars)?;
            vec![bin(&["h2o"])?, "-c".into(), path(&conf)]
        }
        other => return Err(format!("unknown server {other}")),
    };
    Ok(argv)
}

fn bin(names: &[&str]) -> Result<String, String> {
    find_binary(names)
        .map(|p| path(&p))
        .ok_or_else(|| format!("{} not installed", names[0]))
}

fn path(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// A backend for one scenario, with what it holds.
pub struct Backend {
    pub behind: Behind,
    _proc: Option<Proc>,
    _dir: Scratch,
}

/// Starts what `kind` needs behind the front ends, on `cpus`; `files` is
/// the docroot for static scenarios.
pub fn start_backend(
    kind: Kind,
    pool: FpmPool,
    cpus: &[usize],
    files: &Path,
    paths: &Paths,
) -> Result<Backend, String> {
    let dir = Scratch::new("backend");
    let prefix = path(&dir.0);
    let (behind, proc) = match kind {
        Kind::Static => (Behind::Files(files.to_path_buf()), None),
        Kind::Proxy => {
            let port = free_port();
            let vars = [
                ("PORT", port.to_string()),
                ("PREFIX", prefix.clone()),
                ("WORKERS", "1".into()),
                ("MASTER", "off".into()),
            ];
            let conf = fill(
                &paths.templates.join("nginx-origin.conf"),
                &dir.0,
                "origin.conf",
                &vars,
            )?;
            let argv = vec![
                bin(&["nginx"])?,
                "-c".into(),
                path(&conf),
                "-p".into(),
                prefix,
            ];
            (
                Behind::Http(port),
                Some(Proc::start("origin", &argv, cpus, port, &dir.0)?),
            )
        }
        Kind::Ruby => {
            let argv = vec![bin(&["ruby"])?, path(&paths.ruby_app)];
            let (p, port) = Proc::start_reporting("webrick", &argv, cpus, &dir.0)?;
            (Behind::Http(port), Some(p))
        }
        Kind::Fastcgi => {
            let port = free_port();
            let root = unsafe { libc::geteuid() } == 0;
            let vars = [
                ("PREFIX", prefix.clone()),
                ("LISTEN", format!("127.0.0.1:{port}")),
                ("CHILDREN", pool.children().to_string()),
                (
                    "USERLINES",
                    if root {
                        "user = root\ngroup = root".into()
                    } else {
                        String::new()
                    },
                ),
            ];
            let conf = fill(
                &paths.templates.join("php-fpm.conf"),
                &dir.0,
                "php-fpm.conf",
                &vars,
            )?;
            append(&conf, pool.extra_lines())?;
            let fpm = find_binary(&["php-fpm8.2", "php-fpm8.3", "php-fpm8.4", "php-fpm"])
                .ok_or("php-fpm not installed: apt-get install php-fpm")?;
            let mut argv = vec![path(&fpm), "-F".into(), "-y".into(), path(&conf)];
            if root {
                argv.push("-R".into());
            }
            let p = Proc::start("php-fpm", &argv, cpus, port, &dir.0)?;
            (Behind::FastCgi(port, paths.php_root.clone()), Some(p))
        }
    };
    Ok(Backend {
        behind,
        _proc: proc,
        _dir: dir,
    })
}

/// The path each scenario's client requests.
pub fn request_path(kind: Kind, file: Option<&str>) -> String {
    match kind {
        Kind::Static => format!("/{}", file.unwrap_or("index.html")),
        Kind::Proxy => "/".into(),
        Kind::Fastcgi => "/hello.php".into(),
        Kind::Ruby => "/hello".into(),
    }
}

/// Appends `lines` to the file at `path`.
fn append(path: &Path, lines: &str) -> Result<(), String> {
    use std::io::Write as _;
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(lines.as_bytes()))
        .map_err(|e| format!("{}: {e}", path.display()))
}
