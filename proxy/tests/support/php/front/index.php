<?php
// A front controller as a rewrite reaches it (`^/(.*)$` to
// `/index.php?q=$1`): the page asked for in q, and the CGI variables.
header('Content-Type: text/plain');
echo 'q=', isset($_GET['q']) ? $_GET['q'] : '', "\n";
foreach (['SCRIPT_NAME', 'QUERY_STRING', 'REQUEST_URI', 'PATH_INFO'] as $k) {
    echo $k, '=', isset($_SERVER[$k]) ? $_SERVER[$k] : '', "\n";
}
