<?php
// What a FastCGI script learns of the client certificate: mod_ssl's
// SSL_CLIENT_* variables ("KEY=" when unset; SSL_CLIENT_CERT's first
// line), and whether a client's own Client-Cert fields came through as
// HTTP_CLIENT_CERT* (they must never).
header('Content-Type: text/plain');
foreach (['SSL_CLIENT_VERIFY', 'SSL_CLIENT_S_DN'] as $k) {
    echo $k, '=', isset($_SERVER[$k]) ? $_SERVER[$k] : '', "\n";
}
$pem = isset($_SERVER['SSL_CLIENT_CERT']) ? $_SERVER['SSL_CLIENT_CERT'] : '';
echo 'SSL_CLIENT_CERT=', strtok($pem, "\n"), "\n";
echo 'SSL_CLIENT_CERT_VALID=', openssl_x509_parse($pem) !== false ? 'yes' : 'no', "\n";
foreach (['HTTP_CLIENT_CERT', 'HTTP_CLIENT_CERT_CHAIN'] as $k) {
    echo $k, '=', isset($_SERVER[$k]) ? 'set' : 'unset', "\n";
}
