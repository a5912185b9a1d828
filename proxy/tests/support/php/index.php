<?php
echo "index";