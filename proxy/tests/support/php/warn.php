<?php
// Raises a PHP warning with ?msg= and answers "warned". php-fpm sends the
// warning to the front end as FCGI_STDERR ("PHP message: PHP Warning:  MSG
// in ...") and also writes it to its own log.
$msg = isset($_GET['msg']) ? $_GET['msg'] : 'warn.php';
trigger_error($msg, E_USER_WARNING);
echo "warned";
