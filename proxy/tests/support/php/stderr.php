<?php
// Writes ?msg= as one line to the worker's stderr (php-fpm's log with
// catch_workers_output) and answers "logged".
$msg = isset($_GET['msg']) ? $_GET['msg'] : 'stderr.php';
file_put_contents('php://stderr', $msg . "\n");
echo "logged";
