<?php
// A page PHP says may be cached for a minute (LSCache's case: a PHP site
// behind the edge's cache), tagged for purges; its body names the moment
// it ran, so a response from the cache is the same bytes again.
header('Cache-Control: public, max-age=60');
header('Surrogate-Key: page-' . (isset($_GET['p']) ? $_GET['p'] : 'none'));
header('Content-Type: text/plain');
echo 'ran at ', microtime(true), ' pid ', getmypid(), "\n";
