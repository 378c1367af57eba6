SELECT hb_load_admin_step();
