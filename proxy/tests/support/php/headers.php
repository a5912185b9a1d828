<?php
// The CGI/1.1 variables the front end sent, one "KEY=value" line each
// ("KEY=" when empty or unset), and HTTP_PROXY=set|unset: a front end must
// never pass a client's "Proxy:" header on as HTTP_PROXY (httpoxy).
header('Content-Type: text/plain');
$keys = [
    'SCRIPT_NAME', 'SCRIPT_FILENAME', 'PATH_INFO', 'QUERY_STRING',
    'REQUEST_METHOD', 'REQUEST_URI', 'DOCUMENT_ROOT', 'SERVER_PROTOCOL',
    'GATEWAY_INTERFACE', 'REMOTE_ADDR', 'HTTP_X_TEST',
];
foreach ($keys as $k) {
    echo $k, '=', isset($_SERVER[$k]) ? $_SERVER[$k] : '', "\n";
}
echo 'HTTP_PROXY=', isset($_SERVER['HTTP_PROXY']) ? 'set' : 'unset', "\n";
