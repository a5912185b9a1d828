<?php
// X-Powered-By as PHP sends it with expose_php on (off in the tests'
// php-fpm.conf), for a front end to remove; ?code=N answers status N.
header('X-Powered-By: PHP/test');
if (isset($_GET['code'])) {
    http_response_code((int) $_GET['code']);
}
echo "powered\n";
